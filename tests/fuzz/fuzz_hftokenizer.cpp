// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for the tokenizer.json reader (build with -DATTNVIZ_FUZZ=ON and clang, see
// tests/fuzz/CMakeLists.txt). The first input byte picks what the rest is:
//   0: a tokenizer.json -> parseHfTokenizer, then encode a fixed text and the file's own bytes
//      (their first 4 KB), decode the ids;
//   1: a tokenizer.json and a tokenizer_config.json, split at the first NUL -> the same;
//   2..: a text -> encode with the real Mistral file (fixtures; Qwen 3's 11 MB file takes longer to
//        load under the sanitizers than libFuzzer's time limit, its pipeline is reached through
//        the trimmed copy in the seeds); every token's range must lie inside the text and ranges
//        must go left to right.
// A refusal must be one line that starts with the name it was given.
#include "testpaths.h"
#include "attnviz/subword.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace attnviz;

namespace {
const SubwordTokenizer &mistral()
{
    static std::unique_ptr<SubwordTokenizer> m;
    if (!m && !loadHfTokenizer(ATTNVIZ_FIXTURE("/tokenizers/mistral"), m))
        std::abort();
    return *m;
}

void check(bool ok, const char *what)
{
    if (!ok) {
        std::fprintf(stderr, "fuzz_hftokenizer: %s\n", what);
        std::abort();
    }
}

void expectOneLine(const Status &s, const std::string &name)
{
    if (!s.ok())
        check(s.message.rfind(name + " (", 0) == 0 && s.message.find('\n') == std::string::npos,
              "a refusal that is not one line naming the file");
}

void checkRanges(const std::string &text, const std::vector<TraceToken> &tokens)
{
    size_t lastBegin = 0;
    for (const TraceToken &t : tokens) {
        check(t.begin <= t.end && t.end <= text.size(), "a range outside the text");
        check(t.begin >= lastBegin, "ranges out of order");
        lastBegin = t.begin;
    }
}

void exercise(const std::string &json, const std::string &config)
{
    std::unique_ptr<SubwordTokenizer> tok;
    const Status s = parseHfTokenizer(json, config, "fuzz", tok);
    expectOneLine(s, "fuzz");
    if (!s)
        return;
    std::vector<TraceToken> tokens;
    for (const std::string &text :
         {std::string("Hello world\n\t 123 caf\xC3\xA9 \xE4\xB8\xAD <s>"), json.substr(0, 4096)}) {
        const Status e = tok->encode(text, tokens);
        expectOneLine(e, "fuzz");
        if (!e)
            continue;
        checkRanges(text, tokens);
        std::vector<int> ids;
        for (const TraceToken &t : tokens)
            ids.push_back(t.id);
        (void)tok->decode(ids);
    }
    (void)tok->decode({-1, 0, 1, 1 << 30});
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const std::string rest(reinterpret_cast<const char *>(data) + 1, size - 1);
    switch (data[0]) {
    case 0:
        exercise(rest, "");
        break;
    case 1: {
        const size_t nul = rest.find('\0');
        exercise(rest.substr(0, nul), nul == std::string::npos ? "" : rest.substr(nul + 1));
        break;
    }
    default: {
        std::vector<TraceToken> tokens;
        check(mistral().encode(rest, tokens).ok(), "the real tokenizer refused a text");
        checkRanges(rest, tokens);
    }
    }
    return 0;
}
