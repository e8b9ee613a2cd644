// SPDX-License-Identifier: GPL-3.0-or-later
// Empty: the object the test suites' shared precompiled headers are built beside (tests/CMakeLists.txt,
// attnviz_test_pch_holder).
