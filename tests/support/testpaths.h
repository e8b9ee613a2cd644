// SPDX-License-Identifier: GPL-3.0-or-later
// Where a test finds the checkout, its fixtures, its build folder and the attnviz program it tests.
// The paths live in one generated file per build (testpaths.cpp, written by tests/CMakeLists.txt),
// not in each suite's object: an object that holds no folder's name is the same in every clone, so
// a compiler cache filled in one checkout serves a fresh clone in another folder (README,
// "Contributing"). Plain C++, for the Qt suites and the fuzz targets alike.
#pragma once

// Not inside namespace attnviz: several suites name their helper attnviz().
namespace attnviz_testpaths {

const char *sourceDir();     // the checkout's root
const char *fixturesDir();   // tests/fixtures
const char *binaryDir();     // the build folder's root
const char *attnvizBinary(); // this build's attnviz program

// `dir` followed by `rel` (which starts with '/'), kept for the life of the process: the result
// serves wherever a string literal did.
const char *join(const char *dir, const char *rel);

} // namespace attnviz_testpaths

#define ATTNVIZ_BINARY (::attnviz_testpaths::attnvizBinary())
#define ATTNVIZ_FIXTURES_DIR (::attnviz_testpaths::fixturesDir())
#define ATTNVIZ_SOURCE_DIR (::attnviz_testpaths::sourceDir())
// A file or folder under tests/fixtures, the checkout, the fuzz seeds or the build folder.
#define ATTNVIZ_FIXTURE(rel) (::attnviz_testpaths::join(::attnviz_testpaths::fixturesDir(), rel))
#define ATTNVIZ_SOURCE_PATH(rel) (::attnviz_testpaths::join(::attnviz_testpaths::sourceDir(), rel))
#define ATTNVIZ_FUZZ_SEED(rel) ATTNVIZ_SOURCE_PATH("/tests/fuzz/seeds" rel)
#define ATTNVIZ_BUILD_PATH(rel) (::attnviz_testpaths::join(::attnviz_testpaths::binaryDir(), rel))
