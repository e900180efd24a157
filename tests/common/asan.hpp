// SPDX-License-Identifier: MIT
// TRNSIM_TEST_ASAN is defined when the test is built with AddressSanitizer (the asan preset), for
// the checks that do not hold under it. GCC says ASan with __SANITIZE_ADDRESS__, Clang 14 only
// through __has_feature.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define TRNSIM_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TRNSIM_TEST_ASAN 1
#endif
#endif
