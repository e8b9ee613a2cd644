// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: tokenizer.json's text pipeline (normalizer, then pre-tokenizer: Split patterns,
// Replace, Prepend, Sequence, Metaspace, ByteLevel, ...) over a small fixed model, so that the
// fuzzer's time goes to the pipeline, not to reading a vocabulary. The input is
//   normalizer JSON \0 pre_tokenizer JSON \0 text
// (a part left out is null; the text defaults to a fixed one). parseHfTokenizer builds it, then
// the text and a fixed one are encoded: every token's range inside its text, left to right; the
// ids decoded. A refusal (at build or at encode: a pattern's step limit, a text grown past its
// bound) is one line naming the file.
#include "fuzzcheck.h"

#include "attnviz/subword.h"

#include <string>
#include <vector>

namespace {

void check(bool ok, const char *what)
{
    if (!ok) {
        std::fprintf(stderr, "fuzz_hf_pipeline: %s\n", what);
        std::abort();
    }
}

// GPT-2's byte-level alphabet (a printable character for each byte), "▁", "<unk>" and "<s>", with
// two merges: every text has its tokens whatever the pipeline makes of it.
const std::string &model()
{
    static const std::string m = [] {
        auto utf8 = [](unsigned cp) {
            std::string s;
            if (cp < 0x80) {
                s += char(cp);
            } else if (cp < 0x800) {
                s += char(0xC0 | (cp >> 6));
                s += char(0x80 | (cp & 0x3F));
            } else {
                s += char(0xE0 | (cp >> 12));
                s += char(0x80 | ((cp >> 6) & 0x3F));
                s += char(0x80 | (cp & 0x3F));
            }
            return s;
        };
        std::string vocab;
        int id = 0, extra = 0;
        for (unsigned b = 0; b < 256; ++b) {
            const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
            const unsigned cp = printable ? b : 256 + extra++;
            std::string token = utf8(cp);
            if (token == "\"" || token == "\\")
                token = "\\" + token;
            vocab += (id ? "," : "") + std::string("\"") + token + "\":" + std::to_string(id);
            ++id;
        }
        vocab += ",\"\xE2\x96\x81\":" + std::to_string(id++); // ▁
        vocab += ",\"<unk>\":" + std::to_string(id++);
        vocab += ",\"<s>\":" + std::to_string(id++);
        vocab += ",\"th\":" + std::to_string(id++);
        vocab += ",\"\xC4\xA0t\":" + std::to_string(id++); // Ġt
        return R"({"type":"BPE","vocab":{)" + vocab + R"(},"merges":["t h","Ġ t"],"unk_token":"<unk>"})";
    }();
    return m;
}

std::string part(const std::string &s) { return s.empty() ? std::string("null") : s; }

void encodeChecked(const attnviz::SubwordTokenizer &tok, const std::string &text)
{
    std::vector<attnviz::TraceToken> tokens;
    const attnviz::Status e = tok.encode(text, tokens);
    attnviz::fuzz::expectOneLine(e, "fuzz (tokenizer.json)");
    if (!e)
        return;
    size_t lastBegin = 0;
    std::vector<int> ids;
    for (const attnviz::TraceToken &t : tokens) {
        check(t.begin <= t.end && t.end <= text.size(), "a range outside the text");
        check(t.begin >= lastBegin, "ranges out of order");
        lastBegin = t.begin;
        ids.push_back(t.id);
    }
    (void)tok.decode(ids);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    using namespace attnviz;
    const std::string in(reinterpret_cast<const char *>(data), size);
    const size_t a = in.find('\0');
    const size_t b = a == std::string::npos ? std::string::npos : in.find('\0', a + 1);
    const std::string normalizer = in.substr(0, a);
    const std::string pre = a == std::string::npos ? std::string() : in.substr(a + 1, b == std::string::npos ? b : b - a - 1);
    const std::string text = b == std::string::npos ? std::string() : in.substr(b + 1);
    const std::string json = R"({"version":"1.0","added_tokens":[{"id":258,"content":"<s>","special":true}],"normalizer":)" +
                             part(normalizer) + R"(,"pre_tokenizer":)" + part(pre) +
                             R"(,"post_processor":null,"decoder":null,"model":)" + model() + "}";
    std::unique_ptr<SubwordTokenizer> tok;
    const Status s = parseHfTokenizer(json, "", "fuzz", tok);
    attnviz::fuzz::expectOneLine(s, "fuzz (tokenizer.json)");
    if (!s)
        return 0;
    check(tok != nullptr, "a tokenizer reported built and not there");
    encodeChecked(*tok, text);
    encodeChecked(*tok, "The theory: t\xC3\xA9st  123 \xE4\xB8\xAD <s> \xF0\x9F\x99\x82\n");
    return 0;
}
