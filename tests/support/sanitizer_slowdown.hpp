// RLOCK_SANITIZER_SLOWDOWN: how much the build slows CPU-bound work, set for every test target
// by tests/CMakeLists.txt from cmake/sanitizers.cmake (5 under ThreadSanitizer, 1 otherwise).
// Tests scale by it what a loaded, instrumented run stretches: a bound's slack
// (integration/hostile_common.hpp) or an input whose margins are fractions of a period
// (cli/bench_test.cpp). Built without it (outside CMake), the factor is 1.
#pragma once

#ifndef RLOCK_SANITIZER_SLOWDOWN
#define RLOCK_SANITIZER_SLOWDOWN 1
#endif
