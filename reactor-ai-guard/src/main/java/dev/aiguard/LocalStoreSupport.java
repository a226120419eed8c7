package dev.aiguard;

/** Whether Bucket4j, which the in-process bucket store needs, is on the class path; looked up once. */
final class LocalStoreSupport {

	private static final boolean AVAILABLE = present();

	private LocalStoreSupport() {
	}

	static boolean available() {
		return AVAILABLE;
	}

	private static boolean present() {
		try {
			Class.forName("io.github.bucket4j.Bucket", false, LocalStoreSupport.class.getClassLoader());
			return true;
		}
		catch (ClassNotFoundException | LinkageError absent) {
			return false;
		}
	}
}
