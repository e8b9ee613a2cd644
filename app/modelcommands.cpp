// SPDX-License-Identifier: GPL-3.0-or-later
// The command-line verbs on real checkpoints: `model info DIR`, `model run DIR --text TEXT`,
// `tokenize --model DIR TEXT`, `bench --model DIR | --seeded SHAPE` (architecture.h: seededShape).
#include "commands.h"
#include "output.h"

#include "files/figureexport.h"

#include "attnviz/bench.h"
#include "attnviz/encoderdecoder.h"
#include "attnviz/fileio.h"
#include "attnviz/gpubackend.h"
#include "attnviz/memorybudget.h"
#include "attnviz/parallel.h"
#include "attnviz/pretrained.h"
#include "bundledmodel.h"

#include <QCommandLineParser>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace attnviz::cli {

QString seededShapeList()
{
    QStringList names;
    for (const std::string &n : seededShapeNames())
        names << QString::fromStdString(n);
    return names.join(QStringLiteral(", "));
}

namespace {

// What one attention weight costs in `model run`'s JSON (see modelRun).
constexpr size_t kJsonBytesPerWeight = 16 + 2 * 22;


// Values written as "NaN" / "Infinity" strings (ui::jsonNumber) in a JSON tree.
// --backend of `model run` and `bench`: "cpu" (null, the default), or the GPU forward device,
// started here. "auto" takes the GPU only where it is a real one; `note` says what was chosen and why.
Status gpuDevice(const QString &backend, std::unique_ptr<GpuBackend> &gpu, std::string &note)
{
    note.clear();
    if (backend == QLatin1String("cpu"))
        return {};
    if (backend != QLatin1String("gpu") && backend != QLatin1String("auto"))
        return Status::error(StatusCode::InvalidInput, "--backend: cpu, gpu or auto, not " + printable(backend.toStdString(), 40));
    auto g = std::make_unique<GpuBackend>(GpuApi::Auto);
    if (Status st = g->start(); !st) {
        // gpu asked for and none starts (no device, a pipeline that does not build): the CPU
        // computes the same numbers, and the note says why, as the window's status bar does.
        note = "--backend " + backend.toStdString() + ": " + st.message + "; computing on the CPU";
        return {};
    }
    if (backend == QLatin1String("auto") && g->isSoftware()) {
        note = "--backend auto: " + g->device() + " is a software rasterizer; computing on the CPU";
        return {};
    }
    gpu = std::move(g);
    return {};
}

int countNonFinite(const QJsonValue &v)
{
    if (v.isString())
        return 1;
    int n = 0;
    if (v.isArray())
        for (const QJsonValue &e : v.toArray())
            n += countNonFinite(e);
    return n;
}

std::string architectureText(const Architecture &a);

QJsonObject infoJson(const ModelInfo &i)
{
    return {{QStringLiteral("family"), QString::fromStdString(i.family)},
            {QStringLiteral("kv_heads"), i.kvHeads},
            {QStringLiteral("architecture"), QString::fromStdString(architectureText(i.architecture))},
            {QStringLiteral("name"), QString::fromStdString(i.name)},
            {QStringLiteral("source"), QString::fromStdString(i.source)},
            {QStringLiteral("layers"), i.layers},
            {QStringLiteral("heads"), i.heads},
            {QStringLiteral("d_model"), i.dModel},
            {QStringLiteral("d_head"), i.dHead},
            {QStringLiteral("d_feed_forward"), i.dFeedForward},
            {QStringLiteral("vocabulary"), i.vocabulary},
            {QStringLiteral("max_positions"), i.maxPositions},
            {QStringLiteral("parameters"), double(i.parameters)},
            {QStringLiteral("tokenizer"), QString::fromStdString(i.tokenizer)},
            {QStringLiteral("dtype"), QString::fromStdString(i.dtype)},
            {QStringLiteral("weight_bytes"), double(i.weightBytes)},
            {QStringLiteral("causal"), i.causal},
            {QStringLiteral("masked_lm"), i.maskedLm}};
}

QJsonArray probsJson(const std::vector<TokenProb> &top)
{
    QJsonArray a;
    for (const TokenProb &p : top)
        a.append(QJsonObject{{QStringLiteral("id"), p.id},
                             {QStringLiteral("token"), QString::fromStdString(p.token)},
                             {QStringLiteral("p"), ui::jsonNumber(p.p)}});
    return a;
}

// attentions[layer][head][query][key] of one of a trace's attentions (a head whose weights the trace
// left out: the mean over heads, as Trace::weights gives it).
template <typename T>
QJsonArray attentionsJson(const std::vector<LayerTrace<T>> &layers)
{
    QJsonArray attentions;
    for (const LayerTrace<T> &layer : layers) {
        QJsonArray heads;
        const SequenceResult<T> &s = layer.attention.batch.front();
        for (int h = 0; h < layer.attention.numHeads; ++h) {
            const WeightMatrix<T> &w = h < int(s.weights.size()) ? s.weights[size_t(h)] : s.weightsAvg;
            QJsonArray rows;
            for (Eigen::Index i = 0; i < w.rows(); ++i) {
                QJsonArray row;
                for (Eigen::Index j = 0; j < w.cols(); ++j)
                    row.append(ui::jsonNumber(double(w(i, j))));
                rows.append(row);
            }
            heads.append(rows);
        }
        attentions.append(heads);
    }
    return attentions;
}

// An encoder-decoder trace's ids, tokens and attentions are the decoder's (its start token, then the
// target; its self-attention); the source's and the other two attentions come beside them.
template <typename T>
QJsonObject traceJson(const ModelInfo &info, const Trace<T> &tr)
{
    auto tokensJson = [](const std::vector<TraceToken> &list, QJsonArray &ids, QJsonArray &tokens) {
        for (const TraceToken &t : list) {
            ids.append(t.id);
            tokens.append(QString::fromStdString(t.text));
        }
    };
    QJsonArray ids, tokens;
    tokensJson(tr.tokens, ids, tokens);
    QJsonObject o{{QStringLiteral("model"), infoJson(info)},
                  {QStringLiteral("ids"), ids},
                  {QStringLiteral("tokens"), tokens},
                  {QStringLiteral("attentions"), attentionsJson(tr.layers)}};
    if (tr.encoderDecoder()) {
        QJsonArray sourceIds, sourceTokens;
        tokensJson(tr.seq2seq.sourceTokens, sourceIds, sourceTokens);
        o.insert(QStringLiteral("source_ids"), sourceIds);
        o.insert(QStringLiteral("source_tokens"), sourceTokens);
        o.insert(QStringLiteral("encoder_attentions"), attentionsJson(tr.seq2seq.encoder));
        o.insert(QStringLiteral("cross_attentions"), attentionsJson(tr.seq2seq.cross));
    }
    if (info.causal && !tr.predictions.next.empty())
        o.insert(QStringLiteral("next_tokens"), probsJson(tr.predictions.next.back()));
    if (info.maskedLm) {
        QJsonArray masked;
        for (const auto &m : tr.predictions.masked)
            masked.append(QJsonObject{{QStringLiteral("position"), m.position}, {QStringLiteral("top"), probsJson(m.top)}});
        o.insert(QStringLiteral("masked"), masked);
    }
    if (tr.cut()) {
        o.insert(QStringLiteral("cut"), QString::fromStdString(tr.cutReason));
        o.insert(QStringLiteral("total_tokens"), tr.totalTokens);
    }
    if (tr.edited()) { // every value above is the edited model's
        QJsonArray edits;
        for (const Intervention &e : tr.edits) {
            QJsonObject j{{QStringLiteral("hook"), QString::fromLatin1(hookName(e.hook))},
                          {QStringLiteral("layer"), e.layer},
                          {QStringLiteral("kind"), QString::fromLatin1(editKindName(e.kind))},
                          {QStringLiteral("text"), QString::fromStdString(describeEdit(e))}};
            if (e.head >= 0)
                j.insert(QStringLiteral("head"), e.head);
            QJsonArray positions;
            for (int i : e.positions)
                positions.append(i);
            j.insert(QStringLiteral("positions"), e.positions.empty() ? QJsonValue(QStringLiteral("all")) : QJsonValue(positions));
            edits.append(j);
        }
        o.insert(QStringLiteral("edits"), edits);
    }
    return o;
}

// The architecture in words: "RMSNorm (pre), rotary (llama3, theta 500,000), SiLU gated MLP, sliding window 4,096 on 5 of 6 layers".
std::string architectureText(const Architecture &a)
{
    if (a.layers == 0)
        return std::string();
    const char *norm = a.norm == NormKind::LayerNorm ? "LayerNorm" : a.norm == NormKind::RmsNorm ? "RMSNorm" : "RMSNorm (1 + w)";
    const char *place = a.placement == NormPlacement::Pre ? "pre" : a.placement == NormPlacement::Post ? "post" : "sandwich";
    static const char *const ropes[] = {"default", "linear", "dynamic", "llama3", "yarn", "longrope"};
    static const char *const acts[] = {"GELU (tanh)", "GELU", "ReLU", "SiLU"};
    std::string s = std::string(norm) + " (" + place + "), ";
    if (a.positions == PositionKind::Rotary) {
        s += "rotary (" + std::string(ropes[int(a.rope.type)]) + ", theta " + describeCount(int64_t(a.rope.theta));
        if (a.rope.dims < a.dHead)
            s += ", " + std::to_string(a.rope.dims) + " of " + std::to_string(a.dHead) + " dims";
        if (a.localRope)
            s += "; local layers theta " + describeCount(int64_t(a.ropeLocal.theta));
        s += ")";
    } else if (a.positions == PositionKind::RelativeBuckets) {
        s += "relative position buckets (" + std::to_string(a.relative.buckets) + ", max distance " +
             std::to_string(a.relative.maxDistance) + ")";
    } else if (a.positions == PositionKind::Sinusoidal) {
        s += "sinusoidal positions";
    } else if (a.encoderDecoder && a.seq2seq.positionOffset > 0) {
        s += "learned positions (offset " + std::to_string(a.seq2seq.positionOffset) + ")";
    } else {
        s += "learned positions";
    }
    s += std::string(", ") + acts[int(a.activation)] + (a.gatedMlp ? " gated MLP" : " MLP");
    if (a.qkNorm)
        s += ", q/k norm";
    if (a.encoderDecoder)
        s += ", encoder-decoder (" + std::to_string(a.seq2seq.encoderLayers) + " encoder + " + std::to_string(a.layers) +
             " decoder blocks, cross-attention)";
    if (a.attentionSoftcap > 0 || a.finalSoftcap > 0)
        s += ", soft-capping";
    int sliding = 0, w = 0;
    for (int x : a.window)
        if (x > 0) {
            ++sliding;
            w = x;
        }
    if (sliding)
        s += ", sliding window " + describeCount(w) + " on " + std::to_string(sliding) + " of " + std::to_string(a.layers) + " layers";
    return s;
}


int modelInfo(const QStringList &args)
{
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral("Describes a model folder (config.json, model.safetensors, tokenizer files)."));
    p.addHelpOption();
    p.addPositionalArgument(QStringLiteral("dir"), QStringLiteral("The model folder, or `bundled` (attnviz-tiny 2; `bundled-gpt2`: attnviz-tiny; `bundled-dates`: attnviz-dates, a T5)."));
    QCommandLineOption jsonOpt(QStringLiteral("json"), QStringLiteral("One JSON object instead of text."));
    p.addOption(jsonOpt);
    if (!p.parse(args))
        return fail("model info", p.errorText().toStdString(), 2);
    if (p.isSet(QStringLiteral("help"))) {
        std::fputs(qPrintable(p.helpText()), stdout);
        return 0;
    }
    if (p.positionalArguments().size() != 1)
        return fail("model info", "give one model folder", 2);
    std::unique_ptr<Model> m;
    if (Status st = openModelSource(p.positionalArguments().front(), m); !st)
        return fail("model info", st.message, exitCodeFor(st));
    const ModelInfo i = m->info();
    if (p.isSet(jsonOpt)) {
        const QByteArray b = QJsonDocument(infoJson(i)).toJson(QJsonDocument::Indented);
        std::fwrite(b.constData(), 1, size_t(b.size()), stdout);
        return 0;
    }
    const std::string kv = i.kvHeads > 0 && i.kvHeads < i.heads
                               ? ", " + std::to_string(i.kvHeads) + " key/value heads (grouped-query attention)"
                               : std::string();
    std::printf("family      %s\nname        %s\nlayers      %d\nheads       %d (d_head %d%s)\nwidth       %d (feed-forward %d)\n",
                i.family.c_str(), i.name.c_str(), i.layers, i.heads, i.dHead, kv.c_str(), i.dModel, i.dFeedForward);
    if (!architectureText(i.architecture).empty())
        std::printf("blocks      %s\n", architectureText(i.architecture).c_str());
    const std::string held = i.weightBytes > 0 ? " (" + describeBytes(uint64_t(i.weightBytes)) + " in memory)" : std::string();
    std::printf("vocabulary  %s\npositions   %s\nparameters  %s\ntokenizer   %s\ndtype       %s%s\npredicts    %s\n",
                describeCount(i.vocabulary).c_str(), describeCount(i.maxPositions).c_str(), describeCount(i.parameters).c_str(),
                i.tokenizer.c_str(), i.dtype.c_str(), held.c_str(),
                i.causal ? "the next token (causal)" : i.maskedLm ? "[MASK] fills (bidirectional)" : "nothing (no head)");
    return 0;
}

template <typename T>
Status addLens(bool wanted, const Model &m, const Trace<T> &tr, QJsonObject &o)
{
    if (!wanted)
        return {};
    QJsonObject lens;
    if (Status st = lensJson(m, tr, lens); !st)
        return st;
    o.insert(QStringLiteral("lens"), lens);
    return {};
}

int modelRun(const QStringList &args)
{
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "Runs a model folder on a text and writes one JSON object: ids, tokens, attentions[layer][head][query][key],\n"
        "next_tokens (causal models: the top 10 after the last token), masked (masked-LM models: the top fills of\n"
        "each [MASK]) and model (as `model info`)."));
    p.addHelpOption();
    p.addPositionalArgument(QStringLiteral("dir"), QStringLiteral("The model folder, or `bundled` (attnviz-tiny 2; `bundled-gpt2`: attnviz-tiny; `bundled-dates`: attnviz-dates, a T5)."));
    QCommandLineOption textOpt(QStringLiteral("text"), QStringLiteral("The text."), QStringLiteral("text"));
    QCommandLineOption outOpt({QStringLiteral("o"), QStringLiteral("output")},
                              QStringLiteral("Write the JSON here (default: standard output)."), QStringLiteral("file"));
    QCommandLineOption precisionOpt(QStringLiteral("precision"), QStringLiteral("float32 (default) or float64."),
                                    QStringLiteral("p"), QStringLiteral("float32"));
    QCommandLineOption lensOpt(QStringLiteral("lens"), QStringLiteral(
        "Add \"lens\": the logit lens, lens[layer][position] = the top 5 tokens read from the residual stream after\n"
        "that layer (through the final norm and the unembedding), the actual token's probability and rank, entropy.\n"
        "Encoder-decoder models: the decoder's, by sub-layer: lens.stages[stage][position], stage_names \"L0 self\",\n"
        "\"L0 cross\", \"L0 MLP\", … (the stream after each add; positions the start token, then the target)."));
    QCommandLineOption backendOpt(QStringLiteral("backend"),
                                  QStringLiteral("cpu (default), gpu (Qt RHI compute; float32) or auto (the GPU where it is "
                                                 "not a software rasterizer). \"device\" in the JSON says what computed."),
                                  QStringLiteral("b"), QStringLiteral("cpu"));
    const QCommandLineOption ablateOpt = ablateOption(QStringLiteral("the JSON is then the edited model's and \"edits\" lists them"));
    QCommandLineOption targetOpt(
        QStringLiteral("target"),
        QStringLiteral(
            "Encoder-decoder models (T5, BART, mBART, Marian): the target the decoder reads after its start token "
            "(teacher forcing); --text is\n"
            "the source. The JSON then adds source_ids, source_tokens, encoder_attentions and cross_attentions\n"
            "[layer][head][target token][source token]; ids, tokens and attentions are the decoder's."),
        QStringLiteral("text"));
    p.addOptions({textOpt, outOpt, precisionOpt, lensOpt, backendOpt, ablateOpt, targetOpt});
    p.addOptions(languageOptions());
    if (!p.parse(args))
        return fail("model run", p.errorText().toStdString(), 2);
    if (p.isSet(QStringLiteral("help"))) {
        std::fputs(qPrintable(p.helpText()), stdout);
        return 0;
    }
    if (p.positionalArguments().size() != 1)
        return fail("model run", "give one model folder", 2);
    if (!p.isSet(textOpt))
        return fail("model run", "--text: missing", 2);
    const QString precision = p.value(precisionOpt);
    if (precision != QLatin1String("float32") && precision != QLatin1String("float64"))
        return fail("model run", "--precision: float32 or float64, not " + precision.toStdString(), 2);
    if (precision == QLatin1String("float64") && p.value(backendOpt) == QLatin1String("gpu"))
        return fail("model run", "--precision float64: the GPU computes in float32", 2);
    std::unique_ptr<GpuBackend> gpu;
    std::string backendNote;
    if (Status st = gpuDevice(p.value(backendOpt), gpu, backendNote); !st)
        return fail("model run", st.message, st.code == StatusCode::InvalidInput ? 2 : 1);
    if (!backendNote.empty())
        std::fprintf(stderr, "attnviz model run: note: %s\n", backendNote.c_str());
    std::unique_ptr<Model> m;
    if (Status st = openModelSource(p.positionalArguments().front(), m); !st)
        return fail("model run", st.message, exitCodeFor(st));
    TraceRequest req;
    req.text = p.value(textOpt).toStdString();
    req.keepScores = false;
    req.device = gpu.get();
    if (Status st = ablations(p.values(ablateOpt), m->info(), req.edits); !st)
        return fail("model run", st.message, 2);
    if (Status st = applyLanguages(p, *m); !st)
        return fail("model run", st.message, 2);
    if (m->info().architecture.encoderDecoder) {
        req.target = p.value(targetOpt).toStdString();
    } else if (p.isSet(targetOpt)) {
        return fail("model run",
                    "--target: only encoder-decoder models (t5, bart, mbart, marian) read a target; " + m->info().name +
                        " is " + m->info().family,
                    2);
    }
    // The memory the trace and its JSON take, checked before either is made: every weight is a
    // double in the trace, a JSON value (16 bytes) and about 22 characters of text, twice (the
    // document, then the line written).
    {
        const ModelInfo info = m->info();
        std::vector<TraceToken> tokens;
        if (Status st = m->tokenize(req.text, tokens); !st)
            return fail("model run", st.message, exitCodeFor(st));
        int n = int(tokens.size());
        if (info.maxPositions > 0)
            n = std::min(n, info.maxPositions);
        const size_t scalar = precision == QLatin1String("float64") ? sizeof(double) : sizeof(float);
        if (Status st = checkTraceMemory(info, n, scalar, req.keepScores, kJsonBytesPerWeight); !st)
            return fail("model run", st.message, exitCodeFor(st));
    }
    QJsonObject o;
    if (precision == QLatin1String("float64")) {
        Trace<double> tr;
        if (Status st = m->trace(req, tr); !st)
            return fail("model run", st.message, exitCodeFor(st));
        o = traceJson(m->info(), tr);
        if (Status st = addLens(p.isSet(lensOpt), *m, tr, o); !st)
            return fail("model run", st.message, exitCodeFor(st));
    } else {
        Trace<float> tr;
        if (Status st = m->trace(req, tr); !st)
            return fail("model run", st.message, exitCodeFor(st));
        if (gpu && tr.device == "cpu") // the device could not run it: said, and computed on the CPU
            std::fprintf(stderr, "attnviz model run: note: %s\n", tr.deviceNote.c_str());
        o = traceJson(m->info(), tr);
        o.insert(QStringLiteral("device"), QString::fromStdString(tr.device));
        o.insert(QStringLiteral("device_name"),
                 QString::fromStdString(tr.deviceNote.empty() ? cpuDeviceName() : tr.deviceNote));
        if (Status st = addLens(p.isSet(lensOpt), *m, tr, o); !st)
            return fail("model run", st.message, exitCodeFor(st));
    }
    o.insert(QStringLiteral("precision"), precision);
    // Weights that overflowed (finite weights too large for float32 give Inf, then NaN) are written
    // as compute writes them, "NaN" / "Infinity" strings, counted in `non_finite`, and said here.
    const int nonFinite = countNonFinite(o.value(QStringLiteral("attentions")));
    if (nonFinite > 0) {
        o.insert(QStringLiteral("non_finite"), nonFinite);
        std::fprintf(stderr, "attnviz model run: note: %s attention weights are not finite (NaN or Inf, written as "
                             "\"NaN\" / \"Infinity\"): the weights overflow float32\n",
                     describeCount(nonFinite).c_str());
    }
    // The same for the predictions: a final norm or LM head that overflows makes every p "NaN".
    int badPredictions = 0;
    for (const QJsonValue &t : o.value(QStringLiteral("next_tokens")).toArray())
        badPredictions += countNonFinite(t.toObject().value(QStringLiteral("p")));
    for (const QJsonValue &m : o.value(QStringLiteral("masked")).toArray())
        for (const QJsonValue &t : m.toObject().value(QStringLiteral("top")).toArray())
            badPredictions += countNonFinite(t.toObject().value(QStringLiteral("p")));
    if (badPredictions > 0) {
        o.insert(QStringLiteral("non_finite_predictions"), badPredictions);
        std::fprintf(stderr,
                     "attnviz model run: note: %s predicted probabilities are not finite (NaN or Inf, written as "
                     "\"NaN\" / \"Infinity\"): the final norm or the LM head overflows float32\n",
                     describeCount(badPredictions).c_str());
    }
    std::string error;
    if (!writeOutput(p.value(outOpt), QJsonDocument(o).toJson(QJsonDocument::Compact) + '\n', error))
        return fail("model run", error, 1);
    return 0;
}

} // namespace

// `--ablate L.H[:zero|mean]` values as edits of attn.hook_z (layer L's query head H, both from 0, at
// every position), checked against the model; one line naming the value otherwise.
Status ablations(const QStringList &values, const ModelInfo &info, std::vector<Intervention> &out)
{
    for (const QString &v : values) {
        const std::string what = "--ablate " + v.toStdString() + ": ";
        const QStringList kindSplit = v.split(QLatin1Char(':'));
        const QStringList lh = kindSplit.front().split(QLatin1Char('.'));
        bool okL = false, okH = false;
        const int layer = lh.size() == 2 ? lh[0].toInt(&okL) : 0, head = lh.size() == 2 ? lh[1].toInt(&okH) : 0;
        if (kindSplit.size() > 2 || !okL || !okH)
            return Status::error(StatusCode::InvalidInput, what + "not LAYER.HEAD[:zero|mean] (e.g. 0.3 or 1.2:mean)");
        Intervention e;
        e.hook = HookPoint::AttnZ;
        e.layer = layer;
        e.head = head;
        const QString kind = kindSplit.size() == 2 ? kindSplit[1] : QStringLiteral("zero");
        if (kind == QLatin1String("zero"))
            e.kind = EditKind::Zero;
        else if (kind == QLatin1String("mean"))
            e.kind = EditKind::MeanOverText;
        else
            return Status::error(StatusCode::InvalidInput, what + "the ablation is zero or mean, not " + kind.toStdString());
        if (layer < 0 || layer >= info.layers)
            return Status::error(StatusCode::InvalidInput, what + "layer " + std::to_string(layer) + " is not one of the model's " +
                                                               std::to_string(info.layers) + " layers (0.." + std::to_string(info.layers - 1) + ")");
        if (head < 0 || head >= info.heads)
            return Status::error(StatusCode::InvalidInput, what + "head " + std::to_string(head) + " is not one of the model's " +
                                                               std::to_string(info.heads) + " query heads (0.." + std::to_string(info.heads - 1) + ")");
        out.push_back(std::move(e));
    }
    return {};
}

QList<QCommandLineOption> languageOptions()
{
    return {QCommandLineOption(QStringLiteral("src-lang"),
                               QStringLiteral("An mBART folder's source language (its code after </s>: en_XX, ro_RO, …; "
                                              "default en_XX)."),
                               QStringLiteral("code")),
            QCommandLineOption(QStringLiteral("tgt-lang"),
                               QStringLiteral("An mBART folder's target language: mbart-large-cc25's decoder starts at its "
                                              "code, mBART-50's reads it first (default: the one the folder starts or forces, "
                                              "else en_XX)."),
                               QStringLiteral("code"))};
}

Status applyLanguages(const QCommandLineParser &p, Model &model)
{
    const QString src = QStringLiteral("src-lang"), tgt = QStringLiteral("tgt-lang");
    if (!p.isSet(src) && !p.isSet(tgt))
        return {};
    Seq2SeqLanguages now;
    if (Status st = seq2seqLanguages(model, now); !st)
        return st;
    const std::string source = p.isSet(src) ? p.value(src).toStdString() : now.source;
    const std::string target = p.isSet(tgt) ? p.value(tgt).toStdString() : now.target;
    if (Status st = setSeq2SeqLanguages(model, source, target); !st)
        return Status::error(st.code, "--" + (p.isSet(src) ? src : tgt).toStdString() + ": " + st.message);
    return {};
}

QCommandLineOption ablateOption(const QString &then)
{
    return QCommandLineOption(QStringLiteral("ablate"),
                              QStringLiteral("Ablate layer L's query head H (both from 0): its output before W_O (attn.hook_z) set to\n"
                                             "zero, or to its mean over the text's positions, at every position. Repeatable; %1\n"
                                             "(computed on the CPU).")
                                  .arg(then),
                              QStringLiteral("L.H[:zero|mean]"));
}


int model(const QStringList &args)
{
    const QString sub = args.size() > 1 ? args.at(1) : QString();
    QStringList rest = args.mid(2);
    rest.prepend(args.value(0) + QLatin1Char(' ') + sub);
    if (sub == QLatin1String("info"))
        return modelInfo(rest);
    if (sub == QLatin1String("run"))
        return modelRun(rest);
    if (sub == QLatin1String("list"))
        return modelList(rest);
    if (sub == QLatin1String("--help") || sub == QLatin1String("-h")) {
        std::fputs("Usage: attnviz model info DIR [--json]\n"
                   "       attnviz model run DIR --text TEXT [-o OUT.json] [--precision float32|float64] [--lens]\n"
                   "                                         [--backend cpu|gpu|auto] [--ablate L.H[:zero|mean]]...\n"
                   "DIR is a Hugging Face model folder: config.json (model_type gpt2, bert or distilbert),\n"
                   "model.safetensors (or shards with model.safetensors.index.json) and the tokenizer files\n"
                   "(vocab.json + merges.txt, or vocab.txt + tokenizer_config.json).\n"
                   "       attnviz model list [--json] [--folder DIR] [--add-folder DIR] [--remove-folder DIR]\n"
                   "lists the models on this computer (Hugging Face cache, Ollama, LM Studio, added folders);\n"
                   "wherever DIR is taken, hf:ORG/NAME and ollama:NAME[:TAG] name one of them.\n",
                   stdout);
        return 0;
    }
    return fail("model", "unknown sub-command '" + sub.toStdString() + "' (info, run or list)", 2);
}

int tokenizeWithModel(const QStringList &args)
{
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral("Tokenizes a text with a model folder's tokenizer: one token a line,\n"
                                               "its id, the token as the vocabulary spells it, and its bytes in the text."));
    p.addHelpOption();
    QCommandLineOption modelOpt(QStringLiteral("model"), QStringLiteral("The model folder, or `bundled` (attnviz-tiny 2; `bundled-gpt2`: attnviz-tiny; `bundled-dates`: attnviz-dates, a T5)."), QStringLiteral("dir"));
    p.addOption(modelOpt);
    p.addPositionalArgument(QStringLiteral("text"), QStringLiteral("The text."));
    if (!p.parse(args))
        return fail("tokenize", p.errorText().toStdString(), 2);
    if (p.isSet(QStringLiteral("help"))) {
        std::fputs(qPrintable(p.helpText()), stdout);
        return 0;
    }
    std::unique_ptr<Model> m;
    if (Status st = openModelSource(p.value(modelOpt), m); !st)
        return fail("tokenize", st.message, exitCodeFor(st));
    const std::string text = p.positionalArguments().join(QLatin1Char(' ')).toStdString();
    std::vector<TraceToken> tokens;
    if (Status st = m->tokenize(text, tokens); !st)
        return fail("tokenize", st.message, exitCodeFor(st));
    for (const TraceToken &t : tokens)
        std::printf("%d\t%s\t%zu-%zu\n", t.id, printable(t.text, t.text.size()).c_str(), t.begin, t.end); // a vocabulary's token: no control characters raw
    return 0;
}

int benchModel(const QStringList &args)
{
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "Times a model on the CPU core (or the GPU with --backend gpu): a full trace at each size, one token appended to a 128-token text\n"
        "(causal models: the incremental path; with --typed also typed as the window does, two traces that\n"
        "grow a token a keystroke), and the peak resident memory of the run. Every layer's\n"
        "attention weights are kept (raw scores with --scores); a causal model's LM head runs at the last\n"
        "position, as the window asks. --seeded needs no download: a real checkpoint's shape (gpt2-small,\n"
        "bert-base, smollm2-135m, qwen3-0.6b, llama3.2-1b) with seeded random weights."));
    p.addHelpOption();
    QCommandLineOption modelOpt(QStringLiteral("model"), QStringLiteral("A model folder, or `bundled` (attnviz-tiny 2; `bundled-gpt2`: attnviz-tiny; `bundled-dates`: attnviz-dates, a T5)."), QStringLiteral("dir"));
    QCommandLineOption seededOpt(QStringLiteral("seeded"), QStringLiteral("gpt2-small, bert-base, smollm2-135m, qwen3-0.6b or llama3.2-1b."), QStringLiteral("shape"));
    QCommandLineOption sizesOpt(QStringLiteral("tokens"), QStringLiteral("Text lengths (default 128,1024)."),
                                QStringLiteral("list"), QStringLiteral("128,1024"));
    QCommandLineOption repeatOpt(QStringLiteral("repeat"), QStringLiteral("Runs per size; the median is reported (default 5)."),
                                 QStringLiteral("n"), QStringLiteral("5"));
    QCommandLineOption scoresOpt(QStringLiteral("scores"), QStringLiteral("Keep the raw scores as well as the weights."));
    QCommandLineOption noScoresOpt(QStringLiteral("no-scores"), QStringLiteral("Keep the weights only (the default)."));
    QCommandLineOption jsonOpt(QStringLiteral("json"), QStringLiteral("One JSON object instead of a table."));
    QCommandLineOption dtypeOpt(QStringLiteral("dtype"),
                                QStringLiteral("With --seeded: the weights' precision, f32, bf16, q8_0 or q4_k (the MLP, embeddings and "
                                               "LM head kept so, as a GGUF file's); default the checkpoint's."),
                                QStringLiteral("type"));
    QCommandLineOption readsOpt(QStringLiteral("reads"), QStringLiteral(
        "Causal models: also time what the model reads on the first length (the logit lens column and grid, the\n"
        "norm-weighted switch, attribution, a generated token)."));
    QCommandLineOption backendOpt(QStringLiteral("backend"),
                                  QStringLiteral("cpu (default) or gpu: the GPU forward device (Qt RHI compute)."),
                                  QStringLiteral("b"), QStringLiteral("cpu"));
    QCommandLineOption observeOpt(QStringLiteral("observe"),
                                  QStringLiteral("What a trace keeps: all (every stage; the default), attention (every "
                                                 "layer's weights), layer (the first layer's weights and stages, "
                                                 "as the Weights tab of a large trace asks), tiles (every stage but "
                                                 "no t x t weights: q, k, v and each row's log-sum-exp, the weights "
                                                 "computed where read), tiles-attention (no weights, no other "
                                                 "stage) or tiles-attention-16 (that, with q, k and v rounded to "
                                                 "and kept in the model's 16-bit type where its weights are BF16 "
                                                 "or F16). On the CPU every layer's keys and values too; on the GPU "
                                                 "the rest stays there."),
                                  QStringLiteral("what"), QStringLiteral("all"));
    QCommandLineOption typedOpt(QStringLiteral("typed"),
                                QStringLiteral("Causal models: also a row typed as the window types (two traces, a token "
                                               "longer each keystroke; the peak memory then holds two traces)."));
    QCommandLineOption mapOpt(QStringLiteral("map"),
                              QStringLiteral("Also time an N x N pooled (max) map of one head over the whole text, and "
                                             "its last 256 x 256 weights, and a zoom to 256 x 256 cells mid-text (computed anew), on "
                                             "the last full trace."),
                              QStringLiteral("N"), QStringLiteral("0"));
    QCommandLineOption mapDeviceOpt(QStringLiteral("map-device"),
                                    QStringLiteral("With --map: cpu (the default) or gpu: the same map and zoom also "
                                                   "drawn on the GPU (Qt RHI compute, from q, k and the log-sum-exp), "
                                                   "timed and compared with the CPU's; where no GPU starts, a note and "
                                                   "the CPU's rows only."),
                                    QStringLiteral("d"), QStringLiteral("cpu"));
    QCommandLineOption headsMapOpt(QStringLiteral("heads-map"),
                                   QStringLiteral("Also time the Heads tab's maps on the last full trace: every head's "
                                                  "and then their mean's N x N pooled (max) map of the middle layer over "
                                                  "the whole text, in turn."),
                                   QStringLiteral("N"), QStringLiteral("0"));
    QCommandLineOption rolloutOpt(QStringLiteral("rollout-row"),
                                  QStringLiteral("Also time the Rollout tab's row on a long text on the last full trace: "
                                                 "the rollout row of the last position, then of the middle one, up to the "
                                                 "last layer, every layer's head-mean rows streamed from q and k (with "
                                                 "--observe tiles-attention) or read from the kept weights."));
    QCommandLineOption readingsOpt(QStringLiteral("head-readings"),
                                   QStringLiteral("Also time the Layers x heads grid's readings on the last full trace, "
                                                  "as a long text asks them: the four role scores and the sink mass in one "
                                                  "pass, plain and then norm-weighted (every row of every head summed); "
                                                  "wall and CPU time, once each."));
    QCommandLineOption fullOnlyOpt(QStringLiteral("full-only"),
                                   QStringLiteral("Causal models: time the full trace only (no appended token)."));
    QCommandLineOption contextOpt(QStringLiteral("context"),
                                  QStringLiteral("With --seeded, a rotary shape: read up to N positions instead of the "
                                                 "checkpoint's max_position_embeddings (rotary positions have no table "
                                                 "to outgrow; the angles and any RoPE scaling stay the checkpoint's)."),
                                  QStringLiteral("N"));
    p.addOptions({modelOpt, seededOpt, sizesOpt, repeatOpt, scoresOpt, noScoresOpt, jsonOpt, dtypeOpt, readsOpt, backendOpt,
                  observeOpt, typedOpt, mapOpt, fullOnlyOpt, contextOpt, headsMapOpt, rolloutOpt, readingsOpt,
                  mapDeviceOpt});
    if (!p.parse(args))
        return fail("bench", p.errorText().toStdString(), 2);
    if (p.isSet(QStringLiteral("help"))) {
        std::fputs(qPrintable(p.helpText()), stdout);
        return 0;
    }
    // every argument is read before the model is
    std::vector<int> asked;
    for (const QString &s : p.value(sizesOpt).split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        bool ok = false;
        const int n = s.toInt(&ok);
        if (!ok || n < 2)
            return fail("bench", "--tokens: " + printable(s.toStdString(), 40) + " is not a length of 2 tokens or more", 2);
        asked.push_back(n);
    }
    if (asked.empty())
        return fail("bench", "--tokens: no length given", 2);
    Observe observe;
    if (!benchObserve(p.value(observeOpt).toStdString(), observe))
        return fail("bench", "--observe: all, attention, layer, tiles, tiles-attention or tiles-attention-16, not " +
                                 printable(p.value(observeOpt).toStdString(), 40), 2);
    bool mapOk = false;
    const int map = p.value(mapOpt).toInt(&mapOk);
    if (!mapOk || map < 0)
        return fail("bench", "--map: a side of 0 or more cells, not " + printable(p.value(mapOpt).toStdString(), 40), 2);
    const QString mapDeviceName = p.value(mapDeviceOpt);
    if (mapDeviceName != QLatin1String("cpu") && mapDeviceName != QLatin1String("gpu"))
        return fail("bench", "--map-device: cpu or gpu, not " + printable(mapDeviceName.toStdString(), 40), 2);
    if (mapDeviceName == QLatin1String("gpu") && map == 0)
        return fail("bench", "--map-device gpu: only with --map N (the map it draws)", 2);
    bool headsMapOk = false;
    const int headsMap = p.value(headsMapOpt).toInt(&headsMapOk);
    if (!headsMapOk || headsMap < 0)
        return fail("bench", "--heads-map: a side of 0 or more cells, not " + printable(p.value(headsMapOpt).toStdString(), 40), 2);
    int context = 0;
    if (p.isSet(contextOpt)) {
        bool ok = false;
        context = p.value(contextOpt).toInt(&ok);
        if (!ok || context < 2)
            return fail("bench", "--context: a length of 2 positions or more, not " +
                                     printable(p.value(contextOpt).toStdString(), 40), 2);
        if (!p.isSet(seededOpt))
            return fail("bench", "--context: only with --seeded (a model folder reads the positions its config names)", 2);
    }
    if (p.value(backendOpt) == QLatin1String("auto"))
        return fail("bench", "--backend: cpu or gpu (a benchmark names what it times)", 2);
    std::unique_ptr<GpuBackend> gpu;
    std::string backendNote;
    if (Status st = gpuDevice(p.value(backendOpt), gpu, backendNote); !st)
        return fail("bench", st.message, st.code == StatusCode::InvalidInput ? 2 : 1);
    if (!backendNote.empty()) // the GPU asked for did not start: the CPU is timed, and the table says so
        std::fprintf(stderr, "attnviz bench: note: %s\n", backendNote.c_str());
    // --map-device gpu: the backend of --backend gpu, or one of its own; none starts: a note, the CPU's rows
    std::unique_ptr<GpuBackend> mapGpu;
    GpuBackend *mapOn = nullptr;
    if (mapDeviceName == QLatin1String("gpu")) {
        if (gpu) {
            mapOn = gpu.get();
        } else if (auto g = std::make_unique<GpuBackend>(GpuApi::Auto); Status st = g->start()) {
            mapGpu = std::move(g);
            mapOn = mapGpu.get();
        } else {
            std::fprintf(stderr, "attnviz bench: note: --map-device gpu: %s; the map is timed on the CPU only\n",
                         st.message.c_str());
        }
    }
    MapDevice mapDevice;
    if (mapOn) {
        mapDevice.name = mapOn->name() + " (" + mapOn->device() + (mapOn->isSoftware() ? ", a software rasterizer" : "") + ")";
        mapDevice.pooled = [mapOn](const Trace<float> &tr, int layer, int head, int r0, int r1, int c0, int c1,
                                   int outRows, int outCols, Mat<float> &out) {
            return mapOn->pooledMap(tr, layer, head, r0, r1, c0, c1, outRows, outCols, Pooling::Max, out);
        };
    }
    const bool keepScores = p.isSet(scoresOpt) && !p.isSet(noScoresOpt);
    std::unique_ptr<Model> m;
    const auto t0 = std::chrono::steady_clock::now();
    if (p.isSet(seededOpt)) {
        const QString shape = p.value(seededOpt);
        Architecture arch;
        std::string dtype;
        if (!seededShape(shape.toStdString(), arch, &dtype))
            return fail("bench", "--seeded: " + seededShapeList().toStdString() + ", not " + shape.toStdString(), 2);
        if (p.isSet(dtypeOpt)) {
            dtype = p.value(dtypeOpt).toUpper().toStdString();
            if (dtype != "F32" && dtype != "BF16" && dtype != "Q8_0" && dtype != "Q4_K")
                return fail("bench", "--dtype: f32, bf16, q8_0 or q4_k, not " + printable(p.value(dtypeOpt).toStdString(), 40), 2);
        }
        if (context > 0) {
            if (arch.positions != PositionKind::Rotary)
                return fail("bench", "--context: " + shape.toStdString() +
                                         " learns a table of its positions; only a rotary shape reads past it", 2);
            if (!p.isSet(jsonOpt))
                std::printf("%s: max_position_embeddings %d -> %d (--context; rotary, the angles unchanged)\n",
                            shape.toStdString().c_str(), arch.maxPositions, context);
            arch.maxPositions = context;
        }
        if (Status st = seededPretrained(arch, 1, m, dtype); !st)
            return fail("bench", st.message, 2);
    } else if (Status st = openModelSource(p.value(modelOpt), m); !st) {
        return fail("bench", st.message, exitCodeFor(st));
    }
    const double loadMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const ModelInfo info = m->info();
    const int repeat = std::max(1, p.value(repeatOpt).toInt());
    if (info.maxPositions > 0 && info.maxPositions < 2)
        return fail("bench", info.name + " reads at most " + describeCount(info.maxPositions) +
                                 " token; a benchmark needs texts of 2 or more", 2);
    // a length past the model's positions is cut to them (BERT-base reads 512 of the default 1,024)
    std::vector<int> sizes;
    for (int n : asked) {
        if (info.maxPositions > 0 && n > info.maxPositions) {
            std::fprintf(stderr, "attnviz bench: note: %s reads at most %s tokens: %s tokens timed at %s\n",
                         printable(info.name, 200).c_str(), describeCount(info.maxPositions).c_str(),
                         describeCount(n).c_str(), describeCount(info.maxPositions).c_str());
            n = info.maxPositions;
        }
        if (std::find(sizes.begin(), sizes.end(), n) != sizes.end())
            continue;
        // q, k and v in 16 bits where asked and the weights are (as the trace counts them)
        const bool half = observe.sixteenBit && sixteenBitKept(info);
        if (Status st = checkTraceMemory(info, n, sizeof(float), keepScores, 0, false, observe.weights, observe.stages, half);
            !st)
            return fail("bench", st.message, exitCodeFor(st));
        sizes.push_back(n);
    }
    const std::string device = gpu ? gpu->name() + " (" + gpu->device() + (gpu->isSoftware() ? ", a software rasterizer" : "") + ")"
                                   : "cpu (" + cpuDeviceName() + ")";
    if (!p.isSet(jsonOpt))
        std::printf("%s (%s, %d x %d x %d), %d threads, load %.0f ms, on %s%s\n", info.name.c_str(), info.family.c_str(),
                    info.layers, info.heads, info.dModel, coreThreads(), loadMs, device.c_str(),
                    observe.everything()  ? ""
                    : !observe.weights    ? (observe.stages ? ", no t x t weights kept: q, k, v, log-sum-exp and the stages"
                                          : observe.sixteenBit ? ", no t x t weights kept: q, k, v (16-bit) and log-sum-exp"
                                                               : ", no t x t weights kept: q, k, v and log-sum-exp")
                    : !observe.stages     ? (gpu ? ", every layer's weights read back" : ", every layer's weights kept, no other stage")
                    : gpu                 ? ", the first layer read back"
                                          : ", the first layer kept, of the others their keys and values");
    std::vector<ModelBenchRow> timed;
    const double loadRss = peakRssMb(); // the weights, as loaded: what a trace's memory is above
    if (Status st = runModelBench(*m, sizes, repeat, keepScores, timed, gpu.get(), observe, p.isSet(typedOpt), map,
                                  !p.isSet(fullOnlyOpt), headsMap, p.isSet(rolloutOpt), p.isSet(readingsOpt),
                                  mapOn ? &mapDevice : nullptr);
        !st)
        return fail("bench", st.message, 1);
    if (p.isSet(readsOpt)) {
        std::vector<std::pair<std::string, double>> reads;
        if (Status st = benchReads(*m, sizes.front(), repeat, reads); !st)
            return fail("bench", st.message, exitCodeFor(st));
        for (const auto &r : reads)
            timed.push_back({r.first, sizes.front(), r.second});
    }
    QJsonArray rows;
    for (const ModelBenchRow &r : timed) {
        rows.append(QJsonObject{{QStringLiteral("what"), QString::fromStdString(r.what)},
                                {QStringLiteral("tokens"), r.tokens},
                                {QStringLiteral("ms"), r.ms}});
        if (!p.isSet(jsonOpt))
            std::printf("%-38s %6d tokens  %9.1f ms\n", r.what.c_str(), r.tokens, r.ms);
    }
    const double rss = peakRssMb();
    if (p.isSet(jsonOpt)) {
        const QJsonObject o{{QStringLiteral("model"), infoJson(info)},
                            {QStringLiteral("threads"), coreThreads()},
                            {QStringLiteral("device"), QString::fromStdString(device)},
                            {QStringLiteral("load_ms"), loadMs},
                            {QStringLiteral("scores_kept"), keepScores},
                            {QStringLiteral("stages_kept"), observe.stages},
                            {QStringLiteral("layers_kept"), observe.layers.empty() ? QStringLiteral("all") : QStringLiteral("first")},
                            {QStringLiteral("weights_kept"), observe.weights},
                            {QStringLiteral("rows"), rows},
                            {QStringLiteral("load_rss_mb"), loadRss},
                            {QStringLiteral("peak_rss_mb"), rss}};
        const QByteArray b = QJsonDocument(o).toJson(QJsonDocument::Indented);
        std::fwrite(b.constData(), 1, size_t(b.size()), stdout);
    } else {
        const double weightsMb = double(info.weightBytes) / (1024.0 * 1024.0);
        std::printf("peak resident memory %.0f MB: %.0f MB above the weights' own %.0f MB (%.0f MB resident after "
                    "loading; %s%s)\n",
                    rss, rss - weightsMb, weightsMb, loadRss,
                    observe.weights ? "every layer's attention kept" : "no t x t weights kept",
                    keepScores ? ", scores too" : ", scores not");
    }
    return 0;
}

} // namespace attnviz::cli
