// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: a model folder's config.json (readArchitecture, every family of the registry),
// written to a scratch folder as the reader takes folders.
#include "fuzzcheck.h"

#include "attnviz/architecture.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    using namespace attnviz;
    static const std::string dir = fuzz::scratchFolder();
    fuzz::writeFile(dir + "/config.json", data, size);
    Architecture a;
    fuzz::expectOneLineUnder(readArchitecture(dir, a), dir);
    return 0;
}
