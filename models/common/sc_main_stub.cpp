// SPDX-License-Identifier: MIT
// libsystemc's own main() references sc_main. trnsim's programs and tests have their own main(),
// so this weak definition only satisfies the linker; it never runs.
extern "C" int sc_main(int, char**) __attribute__((weak));
extern "C" int sc_main(int, char**) { return 1; }
