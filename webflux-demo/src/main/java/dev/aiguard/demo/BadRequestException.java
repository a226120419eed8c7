package dev.aiguard.demo;

/**
 * Input the demo refuses, with the short stable code and the sentence that go into the JSON error
 * body {@code {"error": code, "message": message}}.
 */
final class BadRequestException extends RuntimeException {

	private static final long serialVersionUID = 1L;

	private final int status;
	private final String code;

	BadRequestException(int status, String code, String message) {
		super(message, null, false, false);
		this.status = status;
		this.code = code;
	}

	static BadRequestException of(String code, String message) {
		return new BadRequestException(400, code, message);
	}

	int status() {
		return status;
	}

	String code() {
		return code;
	}
}
