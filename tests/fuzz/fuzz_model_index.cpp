// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: model.safetensors.index.json (TensorArchive::openFolder) beside one real shard
// (gpt2-tiny's weights as model-00001-of-00001.safetensors, the name the seed maps every tensor to).
#include "testpaths.h"
#include "fuzzcheck.h"

#include "attnviz/tensorarchive.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    using namespace attnviz;
    static const std::string dir = [] {
        const std::string d = fuzz::scratchFolder();
        const std::string shard = fuzz::readFile(ATTNVIZ_FIXTURE("/models/gpt2-tiny/model.safetensors"));
        fuzz::writeFile(d + "/model-00001-of-00001.safetensors", reinterpret_cast<const uint8_t *>(shard.data()), shard.size());
        return d;
    }();
    fuzz::writeFile(dir + "/model.safetensors.index.json", data, size);
    TensorArchive a;
    const Status st = a.openFolder(dir);
    fuzz::expectOneLineUnder(st, dir);
    if (st) {
        float v[16];
        if (const TensorEntry *e = a.find("transformer.ln_f.bias"); e && e->count <= 16)
            (void)a.read(*e, v);
    }
    return 0;
}
