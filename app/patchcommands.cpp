// SPDX-License-Identifier: GPL-3.0-or-later
// `attnviz patch --model M --clean TEXT --corrupted TEXT --answer A --wrong B --sweep resid|heads|heads-by-pos|mlp|path
// [--receiver L.H:q|k|v] [--metric logit-diff|prob|kl] -o OUT`: an activation or path patching sweep
// (patching.h) written as JSON (the metric grid with its labels and the two unpatched runs' values),
// .npy (the grid, float32), or a figure (.png .svg .pdf: the heatmap the Patching tab draws, through
// the export pipeline of the other figures; main.cpp starts a QApplication for it).
#include "commands.h"
#include "figureoptions.h"
#include "output.h"

#include "files/figureexport.h"
#include "views/patchingview.h"

#include "attnviz/patching.h"
#include "attnviz/reads.h"
#include "bundledmodel.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <qcustomplot.h>

#include <cmath>
#include <cstdio>

namespace attnviz::cli {

namespace {

// A token the user typed as an id, one line naming the option otherwise (several tokens included).
Status tokenId(const Model &m, const char *option, const QString &text, int &id)
{
    Status st = vocabularyId(m, text.toStdString(), id);
    if (st)
        return st;
    std::string why = st.message;
    if (why.rfind("token: ", 0) == 0)
        why = why.substr(7);
    std::vector<TraceToken> tokens; // several tokens: named
    if (why.size() > 1 && why.back() == ')' && m.tokenize(text.toStdString(), tokens).ok() && tokens.size() > 1) {
        std::string names;
        for (const TraceToken &t : tokens)
            if (!t.special)
                names += (names.empty() ? "" : " ") + quoteText(t.text);
        why.insert(why.size() - 1, ": " + names);
    }
    return Status::error(st.code, std::string(option) + ": " + why);
}

} // namespace

int patch(const QStringList &args)
{
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "Activation patching as TransformerLens' get_act_patch_* define it: the corrupted prompt run once per cell\n"
        "with one activation taken from the clean prompt's run. --sweep resid: layers x positions (resid_pre,\n"
        "get_act_patch_resid_pre); heads: layers x heads (attn.hook_z at every position, _attn_head_out_all_pos);\n"
        "heads-by-pos: layers x positions x heads (z of one head at one position, _attn_head_out_by_pos; columns\n"
        "position-major); mlp: layers x positions (mlp_out, get_act_patch_mlp_out); path: layers x heads of sender heads for the\n"
        "receiver head --receiver L.H:q|k|v (path patching, Wang et al. 2022: the sender's clean output reaches only\n"
        "the receiver's queries, keys or values, through the residual stream; senders not before the receiver NaN).\n"
        "--metric, after the last token:\n"
        "logit-diff (default): (LD - LD_corrupted) / (LD_clean - LD_corrupted), LD = logit(--answer) - logit(--wrong),\n"
        "0 the corrupted run, 1 the clean run; prob: the probability of --answer; kl: KL(clean || patched) of the\n"
        "next-token distributions, in nats. The prompts must have the same number of tokens. Causal language models."));
    p.addHelpOption();
    QCommandLineOption modelOpt(QStringLiteral("model"), QStringLiteral("The model folder, .gguf file, or `bundled`."), QStringLiteral("dir"));
    QCommandLineOption cleanOpt(QStringLiteral("clean"), QStringLiteral("The clean prompt."), QStringLiteral("text"));
    QCommandLineOption corruptedOpt(QStringLiteral("corrupted"), QStringLiteral("The corrupted prompt."), QStringLiteral("text"));
    QCommandLineOption answerOpt(QStringLiteral("answer"), QStringLiteral("The right answer: one token (\" Mary\" or Ġ-spelled)."),
                                 QStringLiteral("token"));
    QCommandLineOption wrongOpt(QStringLiteral("wrong"), QStringLiteral("The wrong answer: one token (logit-diff)."), QStringLiteral("token"));
    QCommandLineOption sweepOpt(QStringLiteral("sweep"), QStringLiteral("resid, heads, heads-by-pos, mlp or path."), QStringLiteral("kind"));
    QCommandLineOption receiverOpt(QStringLiteral("receiver"),
                                   QStringLiteral("--sweep path: the receiver head and its input, LAYER.HEAD:q, :k or :v (from 0)."),
                                   QStringLiteral("L.H:x"));
    QCommandLineOption metricOpt(QStringLiteral("metric"), QStringLiteral("logit-diff (default), prob or kl."), QStringLiteral("m"),
                                 QStringLiteral("logit-diff"));
    QCommandLineOption outOpt({QStringLiteral("o"), QStringLiteral("output")},
                              QStringLiteral("OUT.json, OUT.npy, or the heatmap as OUT.png, OUT.svg or OUT.pdf."),
                              QStringLiteral("file"));
    const FigureSizeOptions sizeOpts;
    QCommandLineOption precisionOpt(QStringLiteral("precision"), QStringLiteral("float32 (default) or float64."),
                                    QStringLiteral("p"), QStringLiteral("float32"));
    p.addOptions({modelOpt, cleanOpt, corruptedOpt, answerOpt, wrongOpt, sweepOpt, receiverOpt, metricOpt, outOpt,
                  precisionOpt});
    p.addOptions(sizeOpts.options());
    if (!p.parse(args))
        return fail("patch", p.errorText().toStdString(), 2);
    if (p.isSet(QStringLiteral("help"))) {
        std::fputs(qPrintable(p.helpText()), stdout);
        return 0;
    }
    PatchRequest req;
    const QString metricName = p.value(metricOpt);
    if (metricName == QLatin1String("logit-diff"))
        req.metric = PatchMetric::LogitDiff;
    else if (metricName == QLatin1String("prob"))
        req.metric = PatchMetric::Prob;
    else if (metricName == QLatin1String("kl"))
        req.metric = PatchMetric::Kl;
    else
        return fail("patch", "--metric: logit-diff, prob or kl, not " + metricName.toStdString(), 2);
    const bool needsAnswer = req.metric != PatchMetric::Kl, needsWrong = req.metric == PatchMetric::LogitDiff;
    for (const QCommandLineOption *o : {&modelOpt, &cleanOpt, &corruptedOpt, &answerOpt, &wrongOpt, &sweepOpt, &outOpt})
        if (!p.isSet(*o) && !(o == &answerOpt && !needsAnswer) && !(o == &wrongOpt && !needsWrong))
            return fail("patch", "--" + o->names().last().toStdString() + ": missing", 2);
    const QString sweep = p.value(sweepOpt);
    if (sweep == QLatin1String("resid"))
        req.sweep = PatchSweep::ResidPre;
    else if (sweep == QLatin1String("heads"))
        req.sweep = PatchSweep::HeadsAllPositions;
    else if (sweep == QLatin1String("heads-by-pos"))
        req.sweep = PatchSweep::HeadsByPosition;
    else if (sweep == QLatin1String("mlp"))
        req.sweep = PatchSweep::MlpOut;
    else if (sweep == QLatin1String("path"))
        req.sweep = PatchSweep::Path;
    else
        return fail("patch", "--sweep: resid, heads, heads-by-pos, mlp or path, not " + sweep.toStdString(), 2);
    if (req.sweep == PatchSweep::Path) {
        if (!p.isSet(receiverOpt))
            return fail("patch", "--receiver: missing (--sweep path patches into one receiver head, e.g. --receiver 1.3:k)", 2);
        std::string error;
        if (!parsePathReceiver(p.value(receiverOpt).toStdString(), req.receiver, error))
            return fail("patch", "--receiver: " + error, 2);
    } else if (p.isSet(receiverOpt)) {
        return fail("patch", "--receiver: only with --sweep path", 2);
    }
    const QString out = p.value(outOpt), suffix = QFileInfo(out).suffix().toLower();
    const bool figure = ui::isFigureSuffix(suffix);
    if (suffix != QLatin1String("json") && suffix != QLatin1String("npy") && !figure)
        return fail("patch", "-o " + out.toStdString() + ": .json, .npy, .png, .svg or .pdf", 2);
    ui::FigureOptions figureOptions;
    if (QString error; !sizeOpts.read(p, figureOptions, &error))
        return fail("patch", error, 2);
    if (figure && !qobject_cast<QApplication *>(QCoreApplication::instance()))
        return fail("patch",
                    "-o " + out.toStdString() + ": a figure needs the widgets (give -o OUT.png as its own argument)",
                    2);
    const QString precision = p.value(precisionOpt);
    if (precision != QLatin1String("float32") && precision != QLatin1String("float64"))
        return fail("patch", "--precision: float32 or float64, not " + precision.toStdString(), 2);
    std::unique_ptr<Model> m;
    if (Status st = openModelSource(p.value(modelOpt), m); !st)
        return fail("patch", st.message, exitCodeFor(st));
    if (!m->info().causal)
        return fail("patch", m->info().name + ": not a causal language model (the metric reads next-token logits)", 2);
    if (req.sweep == PatchSweep::Path)
        if (Status st = checkPathReceiver(req.receiver, m->info().layers, m->info().heads); !st)
            return fail("patch", "--receiver: " + st.message, 2);
    if (p.isSet(answerOpt))
        if (Status st = tokenId(*m, "--answer", p.value(answerOpt), req.answer); !st)
            return fail("patch", st.message, exitCodeFor(st));
    if (p.isSet(wrongOpt))
        if (Status st = tokenId(*m, "--wrong", p.value(wrongOpt), req.wrong); !st)
            return fail("patch", st.message, exitCodeFor(st));
    req.clean = p.value(cleanOpt).toStdString();
    req.corrupted = p.value(corruptedOpt).toStdString();
    PatchResult res;
    const Status st = precision == QLatin1String("float64") ? patchSweep<double>(*m, req, res) : patchSweep<float>(*m, req, res);
    if (!st)
        return fail("patch", st.message, exitCodeFor(st));
    auto label = [](const TraceToken &t) { return QString::fromStdString(t.display.empty() ? t.text : t.display); };
    QStringList rows, cols;
    for (int l = 0; l < res.rows; ++l)
        rows << QStringLiteral("L%1").arg(l);
    for (int c = 0; c < res.cols; ++c) {
        if (req.sweep == PatchSweep::HeadsAllPositions || req.sweep == PatchSweep::Path)
            cols << QStringLiteral("H%1").arg(c);
        else if (req.sweep == PatchSweep::HeadsByPosition)
            cols << QStringLiteral("%1 %2 H%3").arg(c / res.heads).arg(label(res.cleanTokens[size_t(c / res.heads)])).arg(c % res.heads);
        else
            cols << QStringLiteral("%1 %2").arg(c).arg(label(res.cleanTokens[size_t(c)]));
    }
    Mat<double> grid(res.rows, res.cols);
    for (int l = 0; l < res.rows; ++l)
        for (int c = 0; c < res.cols; ++c)
            grid(l, c) = res.at(l, c);
    if (figure) {
        ui::PatchingView view(nullptr);
        view.showResult(res);
        view.resize(figureWidgetSize(figureOptions, suffix));
        view.ensurePolished();
        QCustomPlot *plot = view.plot();
        plot->replot(QCustomPlot::rpImmediateRefresh);
        QString error;
        if (!ui::saveFigure(plot, out, figureOptions, &error))
            return fail("patch", error, 1);
        return 0;
    }
    if (suffix == QLatin1String("npy")) {
        ui::LabelledMatrix lm;
        lm.values = grid;
        lm.rows = rows;
        lm.columns = cols;
        QString error;
        if (!ui::saveLabelledMatrix(lm, out, &error))
            return fail("patch", error, 1);
        return 0;
    }
    QJsonArray metric, cleanTokens, corruptedTokens, rowLabels, colLabels;
    for (int l = 0; l < res.rows; ++l) {
        QJsonArray row;
        for (int c = 0; c < res.cols; ++c)
            row.append(ui::jsonNumber(grid(l, c)));
        metric.append(row);
    }
    for (const TraceToken &t : res.cleanTokens)
        cleanTokens.append(QString::fromStdString(t.text));
    for (const TraceToken &t : res.corruptedTokens)
        corruptedTokens.append(QString::fromStdString(t.text));
    for (const QString &s : rows)
        rowLabels.append(s);
    for (const QString &s : cols)
        colLabels.append(s);
    QJsonObject o{{QStringLiteral("sweep"), QString::fromLatin1(patchSweepName(req.sweep))},
                  {QStringLiteral("metric_name"), req.metric == PatchMetric::LogitDiff ? QStringLiteral("normalised logit difference (0 corrupted, 1 clean)")
                                                  : req.metric == PatchMetric::Prob ? QStringLiteral("probability of the answer")
                                                                                    : QStringLiteral("KL(clean || patched), nats")},
                  {QStringLiteral("metric_kind"), QString::fromLatin1(patchMetricName(req.metric))},
                  {QStringLiteral("clean_value"), res.cleanValue},
                  {QStringLiteral("corrupted_value"), res.corruptedValue},
                  {QStringLiteral("rows"), rowLabels},
                  {QStringLiteral("columns"), colLabels},
                  {QStringLiteral("metric"), metric},
                  {QStringLiteral("clean_logit_diff"), res.cleanDiff},
                  {QStringLiteral("corrupted_logit_diff"), res.corruptedDiff},
                  {QStringLiteral("answer"), req.answer < 0 ? QJsonValue() : QJsonValue(QJsonObject{{QStringLiteral("id"), req.answer}, {QStringLiteral("token"), QString::fromStdString(tokenOf(*m, req.answer).token)}})},
                  {QStringLiteral("wrong"), req.wrong < 0 ? QJsonValue() : QJsonValue(QJsonObject{{QStringLiteral("id"), req.wrong}, {QStringLiteral("token"), QString::fromStdString(tokenOf(*m, req.wrong).token)}})},
                  {QStringLiteral("clean_tokens"), cleanTokens},
                  {QStringLiteral("corrupted_tokens"), corruptedTokens},
                  {QStringLiteral("precision"), precision},
                  {QStringLiteral("receiver"), req.sweep == PatchSweep::Path ? QJsonValue(QString::fromStdString(pathReceiverName(req.receiver)))
                                                                              : QJsonValue()},
                  {QStringLiteral("model"), QString::fromStdString(m->info().name)}};
    std::string error;
    if (!writeOutput(out, QJsonDocument(o).toJson(QJsonDocument::Compact) + '\n', error))
        return fail("patch", error, 1);
    return 0;
}

} // namespace attnviz::cli
