// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: a BERT folder's tokenizer_config.json, read as opening the folder reads it
// (openPretrained), beside bert-tiny's config and weights and a 1,200-token vocab.txt (the
// vocab_txt seed, so that each run is quick); a folder that opens then tokenizes a sentence.
#include "testpaths.h"
#include "fuzzcheck.h"

#include "attnviz/pretrained.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    using namespace attnviz;
    static const std::string dir = [] {
        const std::string d = fuzz::scratchFolder();
        for (const char *name : {"config.json", "model.safetensors"})
            if (::symlink((std::string(ATTNVIZ_FIXTURE("/models/bert-tiny/")) + name).c_str(), (d + "/" + name).c_str()) != 0)
                std::abort();
        const std::string vocab = fuzz::readFile(ATTNVIZ_FUZZ_SEED("/vocab_txt/bert-1200.txt"));
        fuzz::writeFile(d + "/vocab.txt", reinterpret_cast<const uint8_t *>(vocab.data()), vocab.size());
        return d;
    }();
    fuzz::writeFile(dir + "/tokenizer_config.json", data, size);
    std::unique_ptr<Model> m;
    const Status st = openPretrained(dir, {}, m);
    fuzz::expectOneLineUnder(st, dir);
    if (st) {
        std::vector<TraceToken> tokens;
        if (!m->tokenize("The Ship's crew", tokens))
            std::abort();
    }
    return 0;
}
