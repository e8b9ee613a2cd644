// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: GGUF files. The container reader (parseGguf: header, metadata, tensor infos,
// every size against the input), the summary's verdict, and for a file that parses, the whole model
// path (openPretrained on a .gguf: the architecture from the {arch}.* keys, the tokenizer from
// tokenizer.ggml.*, every tensor dequantized, a few ids traced), written to a scratch file as that
// path maps files.
#include "fuzzcheck.h"

#include "attnviz/gguf.h"
#include "attnviz/pretrained.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    using namespace attnviz;
    GgufFile f;
    const Status st = parseGguf(data, size, "fuzz.gguf", f);
    fuzz::expectOneLine(st, "fuzz.gguf");
    if (!st)
        return 0;
    (void)ggufUnsupportedReason(f);
    static const std::string dir = fuzz::scratchFolder();
    const std::string path = dir + "/model.gguf";
    fuzz::writeFile(path, data, size);
    GgufSummary s;
    fuzz::expectOneLine(ggufSummary(path, s), path);
    std::unique_ptr<Model> m;
    const Status open = openPretrained(path, {}, m);
    fuzz::expectOneLine(open, path);
    if (open) {
        std::vector<TraceToken> tokens;
        (void)m->tokenize("Hello, world 123", tokens);
        // a few ids through the forward: the quantized products widen the file's blocks
        TraceRequest r;
        for (int id = 0; id < std::min(4, m->info().vocabulary); ++id)
            r.ids.push_back(id);
        Trace<float> t;
        if (!r.ids.empty())
            fuzz::expectOneLineStarting(m->trace(r, t), "");
    }
    return 0;
}
