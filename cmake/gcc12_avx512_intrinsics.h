// Force-included (-include) into every translation unit by GCC 12.0-12.2
// only (CMakeLists.txt).  Those compilers report a false -Wmaybe-uninitialized
// in their own AVX-512 intrinsics header: _mm512_undefined_pd() and its kin
// are written `__m512d __Y = __Y;` on purpose (a "don't care" operand under
// an all-ones mask), and once Eigen's packet code is inlined into ours the
// warning escapes the system-header suppression (GCC bug 105593, fixed in
// 12.3).  With -march=native on an AVX-512 machine it fired ~5,600 times.
//
// A diagnostic pragma applies to the source lines it encloses, so including
// <immintrin.h> first, here, silences exactly this warning inside GCC's
// intrinsics headers (include guards keep later inclusions empty) and leaves
// -Wmaybe-uninitialized on for every line of ours.
#pragma once
// clang reads the build's flags too (scripts/check_thread_safety.py).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif
