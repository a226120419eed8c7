/** A user's module: it reads the library's exported packages and nothing of BlockHound. */
module dev.aiguard.consumer.modulepath {
	requires dev.aiguard;

	exports dev.aiguard.consumer.modulepath;
}
