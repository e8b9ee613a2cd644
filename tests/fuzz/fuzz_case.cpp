// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: case JSON (parseCase), and for a case that parses and is small, the whole path
// `attnviz compute` takes: sentences embedded with a fixed toy table, attention in float64, the
// result as JSON.
#include "fuzzcheck.h"

#include "attnviz/attention.h"
#include "attnviz/caseio.h"
#include "attnviz/memorybudget.h"

namespace {

const attnviz::EmbeddingTable &toyTable()
{
    static const attnviz::EmbeddingTable table = [] {
        attnviz::EmbeddingTable t;
        attnviz::Mat<float> v(4, 6);
        for (int i = 0; i < v.size(); ++i)
            v.data()[i] = float(i % 7) - 3.0f;
        t.assign({"the", "ship", "crew", "my"}, v, "toy");
        return t;
    }();
    return table;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    using namespace attnviz;
    CaseFile c;
    const Status st = parseCase(fuzz::bytes(data, size), "fuzz.json", c);
    fuzz::expectOneLine(st, "fuzz.json");
    if (!st || !embedCaseSentences(c, toyTable()))
        return 0;
    ResolvedShape shape;
    if (!resolveShape(c.config, c.input, shape) || attentionNumbers(shape, c.config.dropout > 0) > 200'000)
        return 0;
    AttentionResult<double> r;
    if (computeAttention(c.config, c.input, r))
        (void)resultToJson(c, r, ResultMeta{});
    return 0;
}
