// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: the tokenizer a GGUF file carries (tokenizer.ggml.*: `gpt2` byte-level BPE with
// merges and the pre-tokenizer tokenizer.ggml.pre names, or `llama` SentencePiece-style from scores,
// byte tokens and token types). The input is a GGUF file; its tensors do not matter (the seeds hold
// none): parseGguf, then the tokenizer built from the metadata, then fixed texts and the file's own
// first bytes encoded (every token's range inside the text, left to right) and the ids decoded.
// A refusal is one line naming the file.
#include "fuzzcheck.h"

#include "attnviz/gguf.h"
#include "attnviz/subword.h"
#include "../../core/src/models/ggufmodel.h"

#include <string>
#include <vector>

namespace {

void check(bool ok, const char *what)
{
    if (!ok) {
        std::fprintf(stderr, "fuzz_gguf_tokenizer: %s\n", what);
        std::abort();
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    using namespace attnviz;
    GgufFile f;
    const Status st = parseGguf(data, size, "fuzz.gguf", f);
    attnviz::fuzz::expectOneLine(st, "fuzz.gguf");
    if (!st)
        return 0;
    std::unique_ptr<SubwordTokenizer> tok;
    const Status built = detail::ggufTokenizer(f, tok);
    attnviz::fuzz::expectOneLine(built, "fuzz.gguf");
    if (!built)
        return 0;
    check(tok != nullptr, "a tokenizer reported built and not there");
    const std::string own(reinterpret_cast<const char *>(data), std::min<size_t>(size, 2048));
    for (const std::string &text : {std::string("Hello, world 123  caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x99\x82\n\t<s></s>"),
                                    std::string(300, 'a'), own}) {
        std::vector<TraceToken> tokens;
        const Status e = tok->encode(text, tokens);
        attnviz::fuzz::expectOneLineStarting(e, "");
        if (!e)
            continue;
        size_t lastBegin = 0;
        std::vector<int> ids;
        for (const TraceToken &t : tokens) {
            check(t.begin <= t.end && t.end <= text.size(), "a range outside the text");
            check(t.begin >= lastBegin, "ranges out of order");
            lastBegin = t.begin;
            ids.push_back(t.id);
        }
        (void)tok->decode(ids);
    }
    (void)tok->decode({-1, 0, 1, 1 << 30});
    return 0;
}
