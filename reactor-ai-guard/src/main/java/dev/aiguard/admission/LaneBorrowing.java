package dev.aiguard.admission;

import java.util.Objects;

import org.jspecify.annotations.Nullable;

/**
 * Which lane's permit a request may use, and the books of permits used across lanes: borrowed
 * from a less urgent lane ({@link LaneSpec#borrowFromLower(boolean)}, counted in the lender's
 * {@code lentDown}), lent by a more urgent one ({@link LaneSpec#lendToLower(double)}, counted in
 * {@code lentUp} and listed for preemption). Drain loop only, except {@link #takeFree}, whose
 * permit takes are CASes like the fast paths'.
 */
final class LaneBorrowing {

	private final Lane[] lanes;

	LaneBorrowing(Lane[] lanes) {
		this.lanes = lanes;
	}

	/** Whether a request of priority ordinal {@code p} may take a free permit of {@code lane}. */
	boolean mayUse(int p, Lane lane) {
		int l = lane.priority.ordinal();
		if (p == l) {
			return true;
		}
		if (p < l) {
			return lanes[p].spec.borrowFromLower() && lane.lentDown < lane.borrowable;
		}
		// work-conserving lending: only while the lane has nobody of its own waiting
		return lane.lentUp < lane.lendCap && lane.queueSize == 0;
	}

	/**
	 * Takes a permit for priority ordinal {@code p}: own lane first, then idle permits of less
	 * urgent lanes, then lent permits of more urgent ones, nearest first.
	 *
	 * @return the lane whose permit was taken, or null when none may be used
	 */
	@Nullable
	Lane takeFree(int p) {
		Lane own = lanes[p];
		if (own.tryTake()) {
			return own;
		}
		if (own.spec.borrowFromLower()) {
			for (int l = p + 1; l < lanes.length; l++) {
				if (mayUse(p, lanes[l]) && lanes[l].tryTake()) {
					return lanes[l];
				}
			}
		}
		for (int l = p - 1; l >= 0; l--) {
			if (mayUse(p, lanes[l]) && lanes[l].tryTake()) {
				return lanes[l];
			}
		}
		return null;
	}

	/**
	 * The lane an arrival of priority ordinal {@code p} that found nothing free may take a lent
	 * permit back from: its own, else a less urgent one it may borrow from. Only lanes with
	 * {@link LaneSpec#preemptBorrowers(boolean)} give permits back this way.
	 *
	 * @return that lane, or null when there is none
	 */
	@Nullable
	Lane preemptible(int p) {
		for (int l = p; l < lanes.length; l++) {
			Lane lane = lanes[l];
			if (lane.spec.preemptBorrowers() && lane.lent.tail != null && (l == p || mayUse(p, lane))) {
				return lane;
			}
		}
		return null;
	}

	/** The permit {@code lane} takes back: the least urgent borrower, the most recently admitted among those. */
	static LaneTicket victim(Lane lane) {
		// called for a lane preemptible() chose, which it did for a non-empty lent list
		LaneTicket victim = Objects.requireNonNull(lane.lent.tail, "lent.tail");
		for (LaneTicket c = victim.prev; c != null; c = c.prev) {
			if (c.priority.ordinal() > victim.priority.ordinal()) {
				victim = c;
			}
		}
		return victim;
	}

	/** Books a permit of {@code lane} just granted to {@code t}, when it is another lane's. */
	void granted(LaneTicket t, Lane lane) {
		int p = t.priority.ordinal();
		int l = lane.priority.ordinal();
		if (p == l) {
			return;
		}
		// borrowed permits are only ever granted and freed by the drain loop
		Lane own = lanes[p];
		own.borrowedInFlight = own.borrowedInFlight + 1;
		if (p < l) {
			lane.lentDown = lane.lentDown + 1;
		}
		else {
			lane.lentUp = lane.lentUp + 1;
			lane.lent.append(t);
		}
	}

	/**
	 * Books a borrowed or lent permit handed back (release or preemption); idempotent.
	 *
	 * @param returnPermit whether the permit goes back to the lane's free count (not when it
	 *        passes straight to a preempting arrival)
	 */
	void free(LaneTicket t, boolean returnPermit) {
		Lane lane = t.lane;
		if (lane == null || t.freed) {
			return;
		}
		t.freed = true;
		Lane own = lanes[t.priority.ordinal()];
		int p = t.priority.ordinal();
		int l = lane.priority.ordinal();
		own.borrowedInFlight = own.borrowedInFlight - 1;
		if (p < l) {
			lane.lentDown = lane.lentDown - 1;
		}
		else {
			lane.lentUp = lane.lentUp - 1;
			lane.lent.remove(t);
		}
		if (returnPermit) {
			lane.giveBack();
		}
	}
}
