// Parking idle harts (kernel/park.c): a hart that has had no work for a while
// leaves the executor, which folds its lane into lane 0 and, when only the
// boot hart is left, takes the one-lane steps again; a busy hart's tick, or a
// spawn aimed at a parked hart, brings it back.
#ifndef PARK_H
#define PARK_H
#include <stdint.h>

struct hart;

// How long a hart must be idle (no dispatch) before it parks, in
// milliseconds; 0 (the default): never. Bootargs park_ms=N.
void park_set_delay_ms(uint32_t ms);
uint32_t park_delay_ms(void);
// idle_wait, interrupts off: park now if this hart has been idle long enough
// and may_park (nothing looked ready anywhere), and return once started
// again (1); else 0, with in *recheck when to ask again (a deadline for the
// idle hart's timer; ~0: no need).
int park_idle(struct hart *h, uint64_t now, int may_park, uint64_t *recheck);
// Harts 0..index must run: start every parked one up to index (a spawn
// aimed at a hart). Holds the lock that parking takes while fn runs, so
// that the hart cannot park again before fn has queued its work there;
// returns fn's value.
int64_t park_hold_awake(uint32_t index, int64_t (*fn)(void *), void *arg);
// A busy hart's tick with work waiting and no hart idle: start one more.
void park_tick(void);
// Harts in use now (the executor's lanes): parked harts are those at or
// above it.
uint32_t park_harts_awake(void);
// Time hart h has spent parked, in timebase ticks, the present park too.
uint64_t park_time(const struct hart *h);

#endif
