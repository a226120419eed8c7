package dev.aiguard.load;

/** A health signal whose score a test sets; NaN means no data. */
final class Dial implements HealthSignal {

	private final String name;
	volatile double value;
	volatile int reads;

	Dial(String name, double value) {
		this.name = name;
		this.value = value;
	}

	void set(double v) {
		value = v;
	}

	@Override
	public String name() {
		return name;
	}

	@Override
	public double score(IntervalStats interval) {
		reads++;
		return value;
	}
}
