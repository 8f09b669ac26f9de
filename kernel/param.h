// Compile-time limits, in one place; also included from assembly.
#ifndef PARAM_H
#define PARAM_H
#define BOARD_MAX_HARTS 8       // harts Coral will bring up (the DTB may list more)
#define KSTACK_SIZE 16384       // boot/loop stack of each hart
#define TICK_HZ 100             // periodic timer tick per hart
#define UWAIT_KICK_DELAY_US 500 // ready user work this old wakes an idle sibling thread (kick_us)
#define PARK_DELAY_MS 50        // a hart idle this long parks (kernel/park.c; park_ms, 0: never)
#endif
