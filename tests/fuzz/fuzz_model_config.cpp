// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: a model folder's config.json (readPretrainedConfig, every family it knows),
// written to a scratch folder as the reader takes folders.
#include "fuzzcheck.h"

#include "attnviz/pretrained.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    using namespace attnviz;
    static const std::string dir = fuzz::scratchFolder();
    fuzz::writeFile(dir + "/config.json", data, size);
    PretrainedConfig c;
    fuzz::expectOneLineUnder(readPretrainedConfig(dir, c), dir);
    return 0;
}
