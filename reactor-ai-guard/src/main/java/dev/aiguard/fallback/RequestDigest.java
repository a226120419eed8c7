package dev.aiguard.fallback;

/** A 256-bit request digest as four longs: cheap equals and hashCode, 32 bytes of key. */
final class RequestDigest {

	private static final char[] HEX = "0123456789abcdef".toCharArray();

	private final long w0;
	private final long w1;
	private final long w2;
	private final long w3;

	private RequestDigest(long w0, long w1, long w2, long w3) {
		this.w0 = w0;
		this.w1 = w1;
		this.w2 = w2;
		this.w3 = w3;
	}

	static RequestDigest of(byte[] sha256) {
		if (sha256.length != 32) {
			throw new IllegalArgumentException("sha256 must be 32 bytes, was " + sha256.length);
		}
		return new RequestDigest(word(sha256, 0), word(sha256, 8), word(sha256, 16), word(sha256, 24));
	}

	private static long word(byte[] b, int offset) {
		long w = 0L;
		for (int i = 0; i < 8; i++) {
			w = (w << 8) | (b[offset + i] & 0xFFL);
		}
		return w;
	}

	@Override
	public boolean equals(Object o) {
		if (this == o) {
			return true;
		}
		if (!(o instanceof RequestDigest)) {
			return false;
		}
		RequestDigest d = (RequestDigest) o;
		return w0 == d.w0 && w1 == d.w1 && w2 == d.w2 && w3 == d.w3;
	}

	@Override
	public int hashCode() {
		// the digest is uniformly distributed already
		return (int) (w0 ^ (w0 >>> 32));
	}

	@Override
	public String toString() {
		char[] out = new char[7 + 64];
		"sha256:".getChars(0, 7, out, 0);
		long[] words = {w0, w1, w2, w3};
		int p = 7;
		for (long w : words) {
			for (int shift = 60; shift >= 0; shift -= 4) {
				out[p++] = HEX[(int) ((w >>> shift) & 0xF)];
			}
		}
		return new String(out);
	}
}
