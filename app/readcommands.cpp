// SPDX-License-Identifier: GPL-3.0-or-later
// The command-line side of reads.h: `attnviz generate --model DIR --text T --tokens N` (greedy, or
// sampled with --temperature, --top-k, --top-p, --seed) and the logit lens as JSON (`model run
// --lens`, written by lensJson).
#include "commands.h"
#include "output.h"

#include "files/figureexport.h"

#include "attnviz/encoderdecoder.h"
#include "attnviz/reads.h"
#include "attnviz/seq2seqreads.h"
#include "bundledmodel.h"

#include <QCommandLineParser>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

namespace attnviz::cli {

namespace {

// One lens cell: its top tokens, entropy, and the actual token's probability and rank where there is one.
QJsonObject lensCellJson(const LensCell &c)
{
    QJsonArray top;
    for (const TokenProb &p : c.top)
        top.append(QJsonObject{{QStringLiteral("id"), p.id},
                               {QStringLiteral("token"), QString::fromStdString(p.token)},
                               {QStringLiteral("p"), ui::jsonNumber(p.p)}});
    QJsonObject cell{{QStringLiteral("top"), top}, {QStringLiteral("entropy"), ui::jsonNumber(c.entropy)}};
    if (c.actualRank > 0) {
        cell.insert(QStringLiteral("actual_p"), ui::jsonNumber(c.actualP));
        cell.insert(QStringLiteral("actual_rank"), c.actualRank);
    }
    return cell;
}

// An encoder-decoder model's decoder read by sub-layer (seq2seqreads.h): stages[row][position], the
// rows named by stage_names ("L0 self", "L0 cross", "L0 MLP", …).
template <typename T>
Status seq2seqLensJson(const Model &model, const Trace<T> &trace, QJsonObject &out)
{
    Seq2SeqLens lens;
    if (Status st = seq2seqLens(model, trace, 5, lens); !st)
        return st;
    QJsonArray names, rows;
    for (int row = 0; row < lens.rows(); ++row) {
        names.append(QString::fromStdString(decoderStageName(row / 3, DecoderStage(row % 3))));
        QJsonArray cells;
        for (int i = 0; i < lens.positions; ++i)
            cells.append(lensCellJson(lens.at(row, i)));
        rows.append(cells);
    }
    out = QJsonObject{{QStringLiteral("stage_names"), names},
                      {QStringLiteral("stages"), rows},
                      {QStringLiteral("read_as"),
                       QStringLiteral("lens.stages[stage][position]: the decoder's residual stream after each "
                                      "sub-layer (self-attention, cross-attention, MLP of each layer) through its "
                                      "final norm and the unembedding; positions are the decoder's (the start "
                                      "token, then the target); actual = the target token that follows")}};
    return {};
}

} // namespace

template <typename T>
Status lensJson(const Model &model, const Trace<T> &trace, QJsonObject &out)
{
    if (trace.encoderDecoder())
        return seq2seqLensJson(model, trace, out);
    LensGrid grid;
    LensOptions opt;
    opt.topK = 5;
    if (Status st = lensGrid(model, trace, opt, grid); !st)
        return st;
    QJsonArray layers;
    for (int l = 0; l < grid.layers; ++l) {
        QJsonArray row;
        for (int i = 0; i < grid.positions; ++i) {
            row.append(lensCellJson(grid.at(l, i)));
        }
        layers.append(row);
    }
    out = QJsonObject{{QStringLiteral("layers"), layers},
                      {QStringLiteral("read_as"), QStringLiteral("lens[layer][position]: the residual stream after the layer "
                                                                 "through the final norm and the unembedding; actual = %1")
                                                      .arg(model.info().causal ? QStringLiteral("the next token")
                                                                               : QStringLiteral("the token itself (masked LM)"))}};
    return {};
}

template Status lensJson<float>(const Model &, const Trace<float> &, QJsonObject &);
template Status lensJson<double>(const Model &, const Trace<double> &, QJsonObject &);

namespace {

// Text for the terminal: line breaks and tabs kept (a continuation has lines), every other control
// (a vocabulary token's ESC sequence, a C1 control) escaped as printable() escapes it.
std::string terminalText(const std::string &text)
{
    std::string out;
    size_t from = 0;
    while (from <= text.size()) {
        const size_t at = std::min(text.find('\n', from), text.find('\t', from));
        const size_t end = at == std::string::npos ? text.size() : at;
        out += printable(std::string_view(text).substr(from, end - from), std::string::npos);
        if (at == std::string::npos)
            break;
        out += text[at];
        from = at + 1;
    }
    return out;
}

} // namespace

namespace {

// A model whose every trace carries `edits` (TraceRequest::edits): generation through the core's
// one loop (reads.h generate) continues the text with the edited model. Everything else is the
// model's own; the traces it makes are the model's (predictAt and nextTokens read them as such).
class EditedModel : public Model {
public:
    EditedModel(Model &model, std::vector<Intervention> edits) : m_model(model), m_edits(std::move(edits)) {}
    ModelInfo info() const override { return m_model.info(); }
    Status tokenize(std::string_view text, std::vector<TraceToken> &out) const override { return m_model.tokenize(text, out); }
    Status trace(const TraceRequest &request, Trace<float> &out) override { return m_model.trace(edited(request), out); }
    Status trace(const TraceRequest &request, Trace<double> &out) override { return m_model.trace(edited(request), out); }
    Status predictAt(Trace<float> &trace, int position) const override { return m_model.predictAt(trace, position); }
    Status predictAt(Trace<double> &trace, int position) const override { return m_model.predictAt(trace, position); }
    Status nextTokens(const Trace<float> &trace, int position, NextTokens &out) const override
    {
        return m_model.nextTokens(trace, position, out);
    }
    Status nextTokens(const Trace<double> &trace, int position, NextTokens &out) const override
    {
        return m_model.nextTokens(trace, position, out);
    }
    std::shared_ptr<const ReadoutWeights> readout() const override { return m_model.readout(); }
    std::string decode(const std::vector<int> &ids) const override { return m_model.decode(ids); }

private:
    TraceRequest edited(const TraceRequest &request) const
    {
        TraceRequest r = request;
        r.edits.insert(r.edits.end(), m_edits.begin(), m_edits.end());
        return r;
    }
    Model &m_model;
    std::vector<Intervention> m_edits;
};

// generate for an encoder-decoder model: the source read by the encoder, the target generated by
// greedy or beam search with the folder's settings (encoderdecoder.h), each step's cross-attention
// row with --attention.
int generateSeq2Seq(Model &m, const std::string &text, int beams, int maxNew, bool attention, bool json,
                    const std::vector<Intervention> &edits)
{
    TraceRequest req;
    req.text = text;
    req.edits = edits;
    Seq2SeqGenerateOptions opt;
    opt.beams = beams;
    opt.maxNew = maxNew;
    Seq2SeqGeneration g;
    if (Status st = generateTarget(m, req, opt, g); !st)
        return fail("generate", st.message, exitCodeFor(st));
    if (!json) {
        std::string out = g.text;
        if (g.text.empty()) // no tokenizer to decode with: the ids
            for (size_t i = 0; i < g.ids.size(); ++i)
                out += (i ? " " : "") + std::to_string(g.ids[i]);
        std::printf("%s\n", terminalText(out).c_str());
        return 0;
    }
    QJsonArray sourceIds, sourceTokens, generated, tokens;
    for (const TraceToken &t : g.source) {
        sourceIds.append(t.id);
        sourceTokens.append(QString::fromStdString(t.text));
    }
    for (const TraceToken &t : g.tokens) {
        generated.append(t.id);
        tokens.append(QString::fromStdString(t.text));
    }
    const Seq2SeqGenerationSettings &s = g.settings;
    QJsonObject search{{QStringLiteral("beams"), s.numBeams},
                       {QStringLiteral("max_length"), s.maxLength},
                       {QStringLiteral("log_prob"), g.logProb}};
    if (s.numBeams > 1) {
        search.insert(QStringLiteral("length_penalty"), s.lengthPenalty);
        search.insert(QStringLiteral("early_stopping"), s.earlyStopping == 2 ? QJsonValue(QStringLiteral("never"))
                                                                             : QJsonValue(s.earlyStopping == 1));
        search.insert(QStringLiteral("score"), g.score);
    } else {
        search.insert(QStringLiteral("greedy"), true);
    }
    QJsonObject o{{QStringLiteral("text"), QString::fromStdString(text)},
                  {QStringLiteral("source_ids"), sourceIds},
                  {QStringLiteral("source_tokens"), sourceTokens},
                  {QStringLiteral("generated"), generated},
                  {QStringLiteral("generated_tokens"), tokens},
                  {QStringLiteral("continuation"), QString::fromStdString(g.text)},
                  {QStringLiteral("search"), search}};
    if (attention) { // per generated id: layers × heads × source
        const ModelInfo info = m.info();
        QJsonArray steps;
        for (const Mat<double> &rows : g.cross) {
            QJsonArray layers;
            for (int l = 0; l < info.layers; ++l) {
                QJsonArray heads;
                for (int h = 0; h < info.heads; ++h) {
                    QJsonArray row;
                    for (Eigen::Index j = 0; j < rows.cols(); ++j)
                        row.append(rows(l * info.heads + h, j));
                    heads.append(row);
                }
                layers.append(heads);
            }
            steps.append(layers);
        }
        o.insert(QStringLiteral("cross_attention"), steps);
    }
    const QByteArray b = QJsonDocument(o).toJson(QJsonDocument::Compact) + '\n';
    std::fwrite(b.constData(), 1, size_t(b.size()), stdout);
    return 0;
}

} // namespace

int generateText(const QStringList &args)
{
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "Continues a text with a causal language model, one token at a time: greedy (the default), or sampled\n"
        "with --temperature (> 0), --top-k, --top-p and --seed (torch.manual_seed-compatible draws: the same seed\n"
        "gives the same tokens). Prints the text and its continuation, or with --json: ids, generated ids and text.\n"
        "Encoder-decoder models (t5, bart, mbart, marian) translate the text instead: greedy or beam search\n"
        "(--beams, --max-new; the folder's generation settings otherwise), printing the generated target, or with\n"
        "--json its ids, tokens, source tokens and the search, and with --attention each step's cross-attention."));
    p.addHelpOption();
    QCommandLineOption modelOpt(QStringLiteral("model"), QStringLiteral("The model folder, or `bundled` (attnviz-tiny 2; `bundled-gpt2`: attnviz-tiny; `bundled-dates`: attnviz-dates, a T5)."), QStringLiteral("dir"));
    QCommandLineOption textOpt(QStringLiteral("text"), QStringLiteral("The text to continue."), QStringLiteral("text"));
    QCommandLineOption tokensOpt(QStringLiteral("tokens"), QStringLiteral("Tokens to generate (default 20)."), QStringLiteral("n"),
                                 QStringLiteral("20"));
    QCommandLineOption tempOpt(QStringLiteral("temperature"), QStringLiteral("0: greedy (default); > 0: sampled."),
                               QStringLiteral("t"), QStringLiteral("0"));
    QCommandLineOption topKOpt(QStringLiteral("top-k"), QStringLiteral("Sample among the k most probable (0: all)."),
                               QStringLiteral("k"), QStringLiteral("0"));
    QCommandLineOption topPOpt(QStringLiteral("top-p"), QStringLiteral("Sample among the most probable reaching p (1: all)."),
                               QStringLiteral("p"), QStringLiteral("1"));
    QCommandLineOption seedOpt(QStringLiteral("seed"), QStringLiteral("Seed of the draws (default 0)."), QStringLiteral("s"),
                               QStringLiteral("0"));
    QCommandLineOption jsonOpt(QStringLiteral("json"), QStringLiteral("One JSON object instead of text."));
    const QCommandLineOption ablateOpt = ablateOption(QStringLiteral("the edited model continues the text and --json adds \"edits\""));
    QCommandLineOption beamsOpt(QStringLiteral("beams"),
                                QStringLiteral("Encoder-decoder models: 1 (greedy) to 4 beams (default: the folder's num_beams)."),
                                QStringLiteral("n"));
    QCommandLineOption maxNewOpt(QStringLiteral("max-new"),
                                 QStringLiteral("Encoder-decoder models: tokens to generate at most (default: the folder's max_length - 1)."),
                                 QStringLiteral("n"));
    QCommandLineOption attentionOpt(QStringLiteral("attention"),
                                    QStringLiteral("Encoder-decoder models, with --json: each generated step's cross-attention "
                                                   "(layers x heads x source tokens)."));
    p.addOptions({modelOpt, textOpt, tokensOpt, tempOpt, topKOpt, topPOpt, seedOpt, jsonOpt, ablateOpt, beamsOpt, maxNewOpt,
                  attentionOpt});
    p.addOptions(languageOptions());
    if (!p.parse(args))
        return fail("generate", p.errorText().toStdString(), 2);
    if (p.isSet(QStringLiteral("help"))) {
        std::fputs(qPrintable(p.helpText()), stdout);
        return 0;
    }
    if (!p.isSet(modelOpt))
        return fail("generate", "--model: missing (a model folder, or `bundled`)", 2);
    if (!p.isSet(textOpt))
        return fail("generate", "--text: missing", 2);
    GenerateOptions opt;
    bool ok = false;
    opt.tokens = p.value(tokensOpt).toInt(&ok);
    if (!ok || opt.tokens < 0)
        return fail("generate", "--tokens: a count of 0 or more, not " + p.value(tokensOpt).toStdString(), 2);
    opt.temperature = p.value(tempOpt).toDouble(&ok);
    if (!ok || !std::isfinite(opt.temperature) || opt.temperature < 0)
        return fail("generate", "--temperature: a number of 0 or more, not " + p.value(tempOpt).toStdString(), 2);
    opt.topK = p.value(topKOpt).toInt(&ok);
    if (!ok || opt.topK < 0)
        return fail("generate", "--top-k: a count of 0 or more, not " + p.value(topKOpt).toStdString(), 2);
    opt.topP = p.value(topPOpt).toDouble(&ok);
    if (!ok || !(opt.topP > 0 && opt.topP <= 1))
        return fail("generate", "--top-p: a number in (0, 1], not " + p.value(topPOpt).toStdString(), 2);
    opt.seed = p.value(seedOpt).toULongLong(&ok);
    if (!ok)
        return fail("generate", "--seed: a whole number of 0 or more, not " + p.value(seedOpt).toStdString(), 2);
    int beams = 0, maxNew = -1;
    if (p.isSet(beamsOpt) && (beams = p.value(beamsOpt).toInt(&ok), !ok || beams < 1 || beams > 4))
        return fail("generate", "--beams: 1 (greedy) to 4, not " + p.value(beamsOpt).toStdString(), 2);
    if (p.isSet(maxNewOpt) && (maxNew = p.value(maxNewOpt).toInt(&ok), !ok || maxNew < 0))
        return fail("generate", "--max-new: a count of 0 or more, not " + p.value(maxNewOpt).toStdString(), 2);
    if (p.isSet(attentionOpt) && !p.isSet(jsonOpt))
        return fail("generate", "--attention: the cross-attention is written in --json's output: add --json", 2);
    std::unique_ptr<Model> m;
    if (Status st = openModelSource(p.value(modelOpt), m); !st)
        return fail("generate", st.message, exitCodeFor(st));
    std::vector<Intervention> edits;
    if (Status st = ablations(p.values(ablateOpt), m->info(), edits); !st)
        return fail("generate", st.message, 2);
    if (Status st = applyLanguages(p, *m); !st)
        return fail("generate", st.message, 2);
    const bool seq2seq = m->info().architecture.encoderDecoder;
    for (const QCommandLineOption *o : {&beamsOpt, &maxNewOpt, &attentionOpt})
        if (!seq2seq && p.isSet(*o))
            return fail("generate", "--" + o->names().front().toStdString() +
                                        ": encoder-decoder models only (t5, bart, mbart, marian); " + m->info().name + " is " +
                                        m->info().family + " (--tokens counts what it generates)", 2);
    if (seq2seq) {
        if (p.isSet(tokensOpt))
            return fail("generate", "--tokens: " + m->info().name + " is an encoder-decoder model: --max-new counts what it generates", 2);
        for (const QCommandLineOption *o : {&tempOpt, &topKOpt, &topPOpt, &seedOpt})
            if (p.isSet(*o))
                return fail("generate", "--" + o->names().front().toStdString() + ": sampling from encoder-decoder models (" +
                                            m->info().family + ") is not computed yet: greedy or --beams", 2);
        return generateSeq2Seq(*m, p.value(textOpt).toStdString(), beams, maxNew, p.isSet(attentionOpt), p.isSet(jsonOpt), edits);
    }
    EditedModel edited(*m, edits);
    const std::string text = p.value(textOpt).toStdString();
    Trace<float> trace;
    GenerateResult res;
    if (Status st = generate(edited, text, {}, opt, trace, res); !st)
        return fail("generate", st.message, exitCodeFor(st));
    if (!res.note.empty())
        std::fprintf(stderr, "attnviz generate: note: %s\n", printable(res.note).c_str());
    if (p.isSet(jsonOpt)) {
        QJsonArray ids, generated;
        for (int id : res.ids)
            ids.append(id);
        QJsonArray tokens;
        for (int id : res.generated) {
            generated.append(id);
            tokens.append(QString::fromStdString(tokenOf(*m, id).token));
        }
        QJsonObject o{{QStringLiteral("text"), p.value(textOpt)},
                      {QStringLiteral("ids"), ids},
                      {QStringLiteral("prompt_tokens"), res.promptTokens},
                      {QStringLiteral("generated"), generated},
                      {QStringLiteral("generated_tokens"), tokens},
                      {QStringLiteral("continuation"), QString::fromStdString(res.text)},
                      {QStringLiteral("sampling"), opt.temperature > 0 ? QJsonObject{{QStringLiteral("temperature"), opt.temperature},
                                                                                    {QStringLiteral("top_k"), opt.topK},
                                                                                    {QStringLiteral("top_p"), opt.topP},
                                                                                    {QStringLiteral("seed"), QString::number(opt.seed)}}
                                                                       : QJsonObject{{QStringLiteral("greedy"), true}}}};
        if (!res.note.empty())
            o.insert(QStringLiteral("cut"), QString::fromStdString(res.note));
        if (!edits.empty()) { // the continuation is the edited model's
            QJsonArray list;
            for (const Intervention &e : edits)
                list.append(QString::fromStdString(describeEdit(e)));
            o.insert(QStringLiteral("edits"), list);
        }
        const QByteArray b = QJsonDocument(o).toJson(QJsonDocument::Compact) + '\n';
        std::fwrite(b.constData(), 1, size_t(b.size()), stdout);
        return 0;
    }
    std::printf("%s\n", terminalText(text + res.text).c_str());
    return 0;
}

namespace {

template <typename F>
double medianMs(int repeat, F &&once)
{
    std::vector<double> ms;
    for (int r = 0; r < repeat; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        once();
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

} // namespace

Status benchReads(Model &model, int tokens, int repeat, std::vector<std::pair<std::string, double>> &rows)
{
    const ModelInfo info = model.info();
    if (!info.causal)
        return Status::error(StatusCode::InvalidInput, "--reads: " + info.name + " is not a causal language model");
    std::vector<int> ids;
    for (int i = 0; i < tokens; ++i)
        ids.push_back(int((uint64_t(i) * 7919u + 13u) % uint64_t(std::max(1, info.vocabulary))));
    TraceRequest req;
    req.ids = ids;
    Trace<float> tr;
    if (Status st = model.trace(req, tr); !st)
        return st;
    const int t = int(tr.tokens.size()), L = tr.numLayers();
    Status failed;
    std::vector<LensCell> column;
    rows.emplace_back("lens column (selected position)", medianMs(repeat, [&] {
        if (Status st = lensColumn(model, tr, t - 1, 5, column); !st)
            failed = st;
    }));
    Mat<float> norms, nw;
    (void)valueNorms(tr, L / 2, norms); // the output projection's Gram matrices, once per model
    rows.emplace_back("norm-weighted switch (one head)", medianMs(repeat, [&] {
        if (Status st = normWeighted(tr, L / 2, 0, nw); !st)
            failed = st;
    }));
    rows.emplace_back("norm-weighted, every head of a layer", medianMs(repeat, [&] {
        for (int h = 0; h < tr.numHeads(); ++h)
            (void)normWeighted(tr, L / 2, h, nw);
    }));
    Attribution a;
    const int target = tr.predictions.next.back().front().id;
    rows.emplace_back("attribution (one position)", medianMs(repeat, [&] {
        if (Status st = attribute(model, tr, t - 1, target, a); !st)
            failed = st;
    }));
    LensGrid grid;
    rows.emplace_back("lens grid (every layer x position)", medianMs(1, [&] {
        if (Status st = lensGrid(model, tr, LensOptions(), grid); !st)
            failed = st;
    }));
    for (const double temperature : {0.0, 0.8}) {
        GenerateOptions opt;
        opt.tokens = std::max(1, std::min(8, info.maxPositions > 0 ? info.maxPositions - t : 8));
        opt.temperature = temperature;
        opt.topK = 50;
        std::vector<double> ms;
        auto last = std::chrono::steady_clock::now();
        opt.onToken = [&](int) {
            const auto now = std::chrono::steady_clock::now();
            ms.push_back(std::chrono::duration<double, std::milli>(now - last).count());
            last = now;
            return true;
        };
        Trace<float> g = tr;
        GenerateResult res;
        last = std::chrono::steady_clock::now();
        if (Status st = generate(model, std::string(), ids, opt, g, res); !st)
            return st;
        ms.erase(ms.begin()); // the first includes the prompt's trace
        std::sort(ms.begin(), ms.end());
        rows.emplace_back(temperature > 0 ? "generated token (sampled, top-k 50)" : "generated token (greedy)",
                          ms.empty() ? 0.0 : ms[ms.size() / 2]);
    }
    return failed;
}

} // namespace attnviz::cli
