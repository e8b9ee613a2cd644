// SPDX-License-Identifier: GPL-3.0-or-later
// Which build of the core is running. With run-time ISA dispatch (top-level CMakeLists.txt) the
// core library exists once per x86-64 level and glibc's loader picks the best one the CPU supports;
// each build names the instruction set it was compiled for.
#pragma once

namespace attnviz {

// "AVX-512" (x86-64-v4 build), "AVX2" (x86-64-v3: AVX2 + FMA), "SSE4.2" (x86-64-v2), "SSE2"
// (plain x86-64), else "generic". Shown in cpuDeviceName() and so in `attnviz bench`.
const char *coreIsa();

} // namespace attnviz
