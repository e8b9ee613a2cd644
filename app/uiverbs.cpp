// SPDX-License-Identifier: GPL-3.0-or-later
#include "uiverbs.h"
#include "figureoptions.h"
#include "output.h"
#include "readexport.h"
#include "seq2seqexport.h"

#include "controls/controlpanel.h"
#include "views/embeddingview.h"
#include "files/figureexport.h"
#include "views/headgridview.h"
#include "views/headrolesview.h"
#include "views/heatmapview.h"
#include "views/layergridview.h"
#include "live/livecompute.h"
#include "live/livesession.h"
#include "live/speculation.h"
#include "views/linesview.h"
#include "views/generationpanel.h"
#include "views/logitlensview.h"
#include "mainwindow.h"
#include "window/lessonslides.h"
#include "window/modelloader.h"
#include "window/viewrouter.h"
#include "style/appearance.h"
#include "teaching/comparison.h"
#include "teaching/presets.h"
#include "views/residualview.h"
#include "views/normweighting.h"
#include "views/rowview.h"
#include "views/viewregistry.h"
#include "controls/sentenceedit.h"

#include "attnviz/architecture.h"
#include "attnviz/backend.h"
#include "attnviz/pretrained.h"
#include "bundledmodel.h"
#include "commands.h"
#include "bundledvectors.h"

#include <qcustomplot.h>

#include <QAction>
#include <QApplication>
#include <QCommandLineParser>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFileInfo>
#include <QKeyEvent>
#include <QMap>
#include <QMetaEnum>
#include <QTabWidget>
#include <QTextCursor>
#include <QTimer>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <functional>
#include <random>

#include <sys/resource.h>

namespace {

// The model families a folder's config.json may name (model_type), from the core's own table.
QString modelFamilies()
{
    QStringList types;
    for (const std::string &t : attnviz::knownModelTypes())
        types << QString::fromStdString(t);
    return types.join(QStringLiteral(", "));
}

// The weights colour maps --colormap takes, from the appearance's own names.
QString colourMaps()
{
    using attnviz::ui::SequentialMap;
    QStringList maps;
    for (SequentialMap m : {SequentialMap::Viridis, SequentialMap::Cividis, SequentialMap::Magma, SequentialMap::Greys})
        maps << attnviz::ui::sequentialId(m);
    return maps.join(QStringLiteral(", "));
}

} // namespace

namespace attnviz::cli {

namespace {

// "bundled" or a model folder, read now; false with the core's message.
// `encoderDecoder`: the caller shows such a model (export --view cross|alignment), so it is not refused.
bool openModel(const QString &source, std::shared_ptr<Model> &out, QString *error, bool encoderDecoder = false)
{
    std::unique_ptr<Model> m;
    if (Status st = openModelSource(source, m); !st) {
        *error = QString::fromStdString(st.message);
        return false;
    }
    if (const QString why = ui::ModelLoader::notShown(source, *m); !why.isEmpty() && !encoderDecoder) {
        *error = why;
        return false;
    }
    out = std::move(m);
    return true;
}

} // namespace

int gui(const QStringList &args)
{
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "Opens the attnviz window: on SESSION.attnviz when one is given, else on the session open when attnviz\n"
        "last closed (unless --no-restore). The options below apply on top of either."));
    p.addHelpOption();
    p.addPositionalArgument(QStringLiteral("session"), QStringLiteral("A session file (*.attnviz) to open."),
                            QStringLiteral("[SESSION.attnviz]"));
    QCommandLineOption noRestoreOpt(QStringLiteral("no-restore"),
                                    QStringLiteral("Start from the defaults, not from the session open at the last close."));
    QCommandLineOption embOpt(QStringLiteral("embeddings"), QStringLiteral("Word vectors to use (.txt/.vec/.bin/.avec)."),
                              QStringLiteral("file"));
    QCommandLineOption sentOpt(QStringLiteral("sentence"), QStringLiteral("Sentence to start with."), QStringLiteral("text"));
    QCommandLineOption keyOpt(QStringLiteral("key-sentence"), QStringLiteral("Key/value sentence (cross-attention)."),
                              QStringLiteral("text"));
    QCommandLineOption headsOpt(QStringLiteral("heads"), QStringLiteral("Number of heads to start with."),
                                QStringLiteral("n"));
    QCommandLineOption maskOpt(QStringLiteral("mask"), QStringLiteral("Mask to start with: none, causal."),
                               QStringLiteral("mask"));
    QCommandLineOption tabOpt(QStringLiteral("tab"),
                              QStringLiteral("View to show: %1 (the stack's and a model's tabs once they are listed).")
                                  .arg(ui::tabViewIds().join(QStringLiteral(", "))),
                              QStringLiteral("view"));
    QCommandLineOption depthOpt(QStringLiteral("depth"),
                                QStringLiteral("Transformer stack depth to start with (1: single layer; seeded weights)."),
                                QStringLiteral("n"));
    QCommandLineOption posOpt(QStringLiteral("positions"), QStringLiteral("Stack positions: none, sinusoidal, learned."),
                              QStringLiteral("p"));
    QCommandLineOption blockOpt(QStringLiteral("block"), QStringLiteral("Stack blocks: post (seed 002, default) or pre (GPT-2)."),
                                QStringLiteral("norm"));
    QCommandLineOption shotOpt(QStringLiteral("screenshot"),
                               QStringLiteral("Grab the window into FILE (PNG) once the views are drawn, then quit "
                                              "(implies --no-restore)."),
                               QStringLiteral("file"));
    QCommandLineOption sizeOpt(QStringLiteral("size"), QStringLiteral("Window size WxH (default 1400x900)."),
                               QStringLiteral("WxH"));
    QCommandLineOption presetOpt(QStringLiteral("preset"),
                                 QStringLiteral("Start with a seed demonstration (ID as in the Presets menu, e.g. "
                                                "journey-scores; `list` prints them)."),
                                 QStringLiteral("id"));
    QCommandLineOption themeOpt(QStringLiteral("theme"), QStringLiteral("system, light, dark or high-contrast."),
                                QStringLiteral("theme"));
    QCommandLineOption mapOpt(QStringLiteral("colormap"),
                              QStringLiteral("Weights colour map: %1.").arg(colourMaps()), QStringLiteral("map"));
    QCommandLineOption compareOpt(QStringLiteral("compare"),
                                  QStringLiteral("Open one of the seeds' comparisons on the Compare tab (ID; `list` "
                                                 "prints them)."),
                                  QStringLiteral("id"));
    QCommandLineOption presentOpt(QStringLiteral("presentation"),
                                  QStringLiteral("Start in presentation mode (full screen, large text, high contrast)."));
    QCommandLineOption modelOpt(QStringLiteral("model"),
                                QStringLiteral("A model folder (config.json, model.safetensors, tokenizer files; model_type one "
                                               "of %1), a GGUF file, or `bundled` (attnviz-tiny 2; `bundled-gpt2`: "
                                               "attnviz-tiny; `bundled-dates`: attnviz-dates, a T5).")
                                    .arg(modelFamilies()),
                                QStringLiteral("dir"));
    QCommandLineOption layerOpt(QStringLiteral("layer"), QStringLiteral("Layer to show (with --model or --depth)."),
                                QStringLiteral("n"));
    QCommandLineOption normWeightedOpt(QStringLiteral("norm-weighted"),
                                       QStringLiteral("The attention views draw ||a_ij v_j W_O|| (Kobayashi et al. 2020) "
                                                      "instead of the weights (the View menu's Norm-weighted attention)."));
    p.addOptions({embOpt, sentOpt, keyOpt, headsOpt, maskOpt, tabOpt, shotOpt, sizeOpt, depthOpt, posOpt, blockOpt,
                  presetOpt, themeOpt, mapOpt, presentOpt, noRestoreOpt, compareOpt, modelOpt, layerOpt, normWeightedOpt});
    if (!p.parse(args))
        return fail("", p.errorText(), 2);
    if (p.isSet(QStringLiteral("help"))) {
        std::fputs(qPrintable(p.helpText()), stdout);
        return 0;
    }
    if (p.value(presetOpt) == QLatin1String("list")) {
        for (const ui::Preset &pr : ui::presets())
            std::printf("%-20s seed %s  %s\n", qPrintable(pr.id), qPrintable(pr.seed), qPrintable(pr.title));
        return 0;
    }
    if (p.value(compareOpt) == QLatin1String("list")) {
        for (const ui::ComparisonSpec &c : ui::seedComparisons())
            std::printf("%-20s %s\n", qPrintable(c.id), qPrintable(c.title));
        return 0;
    }
    // Every argument is checked here, before anything is opened or any setting saved (the theme,
    // the recent models): a mistake in the last one leaves everything as it was.
    const QStringList views = ui::tabViewIds();
    if (p.isSet(tabOpt) && !views.contains(p.value(tabOpt)))
        return fail("", QStringLiteral("--tab: expected one of %1").arg(views.join(QStringLiteral(", "))), 2);
    auto integer = [&](const QCommandLineOption &o, int lo, int hi) {
        bool ok = true;
        const int v = p.value(o).toInt(&ok);
        return !p.isSet(o) || (ok && v >= lo && v <= hi);
    };
    auto oneOf = [&](const QCommandLineOption &o, const QStringList &values) { return !p.isSet(o) || values.contains(p.value(o)); };
    if (!integer(headsOpt, 1, 4096))
        return fail("", QStringLiteral("--heads: expected a number of heads from 1"), 2);
    if (!integer(depthOpt, 1, 48))
        return fail("", QStringLiteral("--depth: expected a depth from 1 to 48"), 2);
    if (!integer(layerOpt, 0, 1 << 20))
        return fail("", QStringLiteral("--layer: expected a layer number from 0"), 2);
    if (!oneOf(maskOpt, {QStringLiteral("none"), QStringLiteral("causal")}))
        return fail("", QStringLiteral("--mask: expected none or causal"), 2);
    if (!oneOf(posOpt, {QStringLiteral("none"), QStringLiteral("sinusoidal"), QStringLiteral("learned")}))
        return fail("", QStringLiteral("--positions: expected none, sinusoidal or learned"), 2);
    if (!oneOf(blockOpt, {QStringLiteral("post"), QStringLiteral("pre")}))
        return fail("", QStringLiteral("--block: expected post or pre"), 2);
    if (p.isSet(sizeOpt)) {
        const QStringList wh = p.value(sizeOpt).split(QLatin1Char('x'));
        bool okW = false, okH = false;
        if (wh.size() != 2 || wh[0].toInt(&okW) < 1 || wh[1].toInt(&okH) < 1 || !okW || !okH)
            return fail("", QStringLiteral("--size: expected WIDTHxHEIGHT in pixels, such as 1400x900"), 2);
    }
    if (p.isSet(modelOpt) && p.value(modelOpt).isEmpty())
        return fail("", QStringLiteral("--model: an empty path names no folder"), 2);
    ui::ComparisonSpec comparison;
    if (p.isSet(compareOpt) && !ui::findSeedComparison(p.value(compareOpt), comparison))
        return fail("", QStringLiteral("--compare: no comparison %1 (`attnviz --compare list` lists them)").arg(p.value(compareOpt)), 2);
    if (p.isSet(presetOpt) && !ui::findPreset(p.value(presetOpt)))
        return fail("", QStringLiteral("--preset: no preset %1 (`attnviz window --preset list` lists them)").arg(p.value(presetOpt)), 2);
    ui::Appearance look = ui::AppearanceManager::instance()->appearance();
    if (p.isSet(themeOpt) && !ui::parseTheme(p.value(themeOpt), look.theme))
        return fail("", QStringLiteral("--theme: expected system, light, dark or high-contrast"), 2);
    if (p.isSet(mapOpt) && !ui::parseSequential(p.value(mapOpt), look.sequential))
        return fail("", QStringLiteral("--colormap: expected viridis, cividis, magma or greys"), 2);
    const QStringList sessions = p.positionalArguments();
    if (sessions.size() > 1)
        return fail("", QStringLiteral("one session file at most (got %1)").arg(sessions.size()), 2);
    ui::AppearanceManager::instance()->setAppearance(look);
    ui::MainWindow w;
    // A session file that cannot be opened leaves the window as it starts, with a dialog saying why.
    // A first start (no settings yet) welcomes, with or without --no-restore: the Lesson column points
    // at the lessons. A preset or a comparison fills the column itself; a screenshot shows the views.
    if (!sessions.isEmpty())
        w.openSessionInteractive(sessions.first());
    else if (!p.isSet(shotOpt) && !p.isSet(presetOpt) && !p.isSet(compareOpt)
             && (p.isSet(noRestoreOpt) || !w.restoreLastSession()))
        w.welcomeOnFirstStart();
    if (p.isSet(embOpt)) {
        QString error;
        if (!w.loadEmbeddingsFile(p.value(embOpt), &error))
            return fail("", error, 2);
    }
    if (p.isSet(sentOpt))
        w.setSentence(p.value(sentOpt));
    if (p.isSet(keyOpt))
        w.setKeySentence(p.value(keyOpt));
    ui::ComputeSettings settings = w.controls()->settings();
    if (p.isSet(headsOpt))
        settings.numHeads = std::max(1, p.value(headsOpt).toInt());
    if (p.value(maskOpt) == QLatin1String("causal"))
        settings.mask = ui::MaskChoice::Causal;
    if (p.isSet(depthOpt))
        settings.stack.depth = std::clamp(p.value(depthOpt).toInt(), 1, 48);
    if (p.value(posOpt) == QLatin1String("sinusoidal"))
        settings.stack.positions = PositionEncoding::Sinusoidal;
    else if (p.value(posOpt) == QLatin1String("learned"))
        settings.stack.positions = PositionEncoding::Learned;
    if (p.value(blockOpt) == QLatin1String("pre"))
        settings.stack.norm = NormPlacement::Pre;
    w.controls()->setSettings(settings);
    if (p.isSet(presetOpt))
        w.applyPreset(p.value(presetOpt));
    if (p.isSet(modelOpt)) {
        QString error;
        if (!w.openModel(p.value(modelOpt), &error))
            return fail("", QStringLiteral("--model: %1").arg(error), 2);
    }
    if (p.isSet(layerOpt))
        w.session()->setSelectedLayer(std::max(0, p.value(layerOpt).toInt()));
    if (p.isSet(normWeightedOpt))
        w.views()->setNormWeighted(true);
    if (p.isSet(compareOpt))
        w.startComparison(comparison);
    if (p.isSet(tabOpt)) {
        const QString id = p.value(tabOpt);
        // the stack's views appear with the first stack result: show the tab once the views have it
        if (!w.showView(id))
            QObject::connect(&w, &ui::MainWindow::viewsUpdated, &w, [&w, id] { w.showView(id); });
    }
    if (p.isSet(sizeOpt)) {
        const QStringList wh = p.value(sizeOpt).split(QLatin1Char('x'));
        if (wh.size() == 2)
            w.resize(wh[0].toInt(), wh[1].toInt());
    }
    w.show();
    if (p.isSet(presentOpt))
        w.setPresentationMode(true);
    if (p.isSet(shotOpt)) {
        const QString file = p.value(shotOpt);
        QObject::connect(&w, &ui::MainWindow::viewsUpdated, &w, [&w, file] {
            QTimer::singleShot(400, &w, [&w, file] {
                const bool ok = w.grab().save(file, "PNG");
                if (!ok)
                    std::fprintf(stderr, "attnviz: cannot write %s\n", qPrintable(file));
                QCoreApplication::exit(ok ? 0 : 1);
            });
        });
    }
    return QApplication::exec();
}

int exportView(const QStringList &args)
{
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "Renders a view of the window offscreen (no display needed) and writes it as a figure (.png .svg .pdf)\n"
        "or writes its matrices (.csv .npy .json). The format follows the --out suffix."));
    p.addHelpOption();
    const QString none;
    QCommandLineOption sentOpt(QStringLiteral("sentence"), QStringLiteral("The sentence (queries)."), QStringLiteral("text"));
    QCommandLineOption keyOpt(QStringLiteral("key-sentence"), QStringLiteral("Key/value sentence: cross-attention."),
                              QStringLiteral("text"));
    QStringList viewIds = ui::exportViewIds();
    viewIds << QStringLiteral("cross"); // the weights view on an encoder-decoder model's cross-attention
    viewIds << QStringLiteral("pipeline"); // one stage of an encoder-decoder model's pipeline (seq2seqexport.cpp)
    QCommandLineOption viewOpt(QStringLiteral("view"),
                               QStringLiteral("%1 (weights by default). cross and alignment: an encoder-decoder model's "
                                              "cross-attention (target rows x source columns) and its word alignment "
                                              "(--layer and --head default to avg there: the mean). pipeline: one stage "
                                              "(--stage) of an encoder-decoder model's pipeline of --attention.")
                                   .arg(ui::idChoices(viewIds)),
                               QStringLiteral("view"), QStringLiteral("weights"));
    QCommandLineOption targetOpt(QStringLiteral("target"),
                                 QStringLiteral("With an encoder-decoder --model: the decoder's text (teacher-forced); "
                                                "without it, generated greedily from --sentence (the source)."),
                                 QStringLiteral("text"));
    QCommandLineOption headsOpt(QStringLiteral("heads"), QStringLiteral("Number of heads (default 1)."),
                                QStringLiteral("n"), QStringLiteral("1"));
    QCommandLineOption dHeadOpt(QStringLiteral("d-head"), QStringLiteral("Head width with random projections (default d_model/heads)."),
                                QStringLiteral("n"), QStringLiteral("0"));
    QCommandLineOption headOpt(QStringLiteral("head"), QStringLiteral("Head shown: 0.., or avg (default 0)."),
                               QStringLiteral("h"), QStringLiteral("0"));
    QCommandLineOption queryOpt(QStringLiteral("query"), QStringLiteral("Query token for --view row (default 0)."),
                                QStringLiteral("i"), QStringLiteral("0"));
    QCommandLineOption maskOpt(QStringLiteral("mask"), QStringLiteral("none (default), causal, padding, causal+padding."),
                               QStringLiteral("mask"), QStringLiteral("none"));
    QCommandLineOption padOpt(QStringLiteral("pad"), QStringLiteral("Key token indices masked as padding, e.g. 0,3."),
                              QStringLiteral("list"));
    QCommandLineOption methodOpt(QStringLiteral("mask-method"), QStringLiteral("neg_inf (default) or renormalize."),
                                 QStringLiteral("m"), QStringLiteral("neg_inf"));
    QCommandLineOption scaleOpt(QStringLiteral("scale"),
                                QStringLiteral("inv_sqrt_dhead (default), inv_sqrt_dmodel, none, temperature."),
                                QStringLiteral("rule"), QStringLiteral("inv_sqrt_dhead"));
    QCommandLineOption tempOpt(QStringLiteral("temperature"), QStringLiteral("T for --scale temperature (default 1)."),
                               QStringLiteral("T"), QStringLiteral("1"));
    QCommandLineOption normOpt(QStringLiteral("norm"), QStringLiteral("softmax (default), sum or cosine."),
                               QStringLiteral("n"), QStringLiteral("softmax"));
    QCommandLineOption projOpt(QStringLiteral("projection"),
                               QStringLiteral("identity (default), random, or a projections JSON file."),
                               QStringLiteral("p"), QStringLiteral("identity"));
    QCommandLineOption seedOpt(QStringLiteral("seed"), QStringLiteral("Seed of the random projections (default 0)."),
                               QStringLiteral("n"), QStringLiteral("0"));
    QCommandLineOption dropOpt(QStringLiteral("dropout"), QStringLiteral("Dropout on the weights (default 0)."),
                               QStringLiteral("p"), QStringLiteral("0"));
    QCommandLineOption dropSeedOpt(QStringLiteral("dropout-seed"), QStringLiteral("Dropout seed (default 0)."),
                                   QStringLiteral("n"), QStringLiteral("0"));
    QCommandLineOption embOpt(QStringLiteral("embeddings"),
                              QStringLiteral("Word vectors (.txt/.vec/.bin/.avec); default: the bundled table."),
                              QStringLiteral("file"));
    QCommandLineOption outOpt({QStringLiteral("o"), QStringLiteral("out")}, QStringLiteral("Output file."),
                              QStringLiteral("file"));
    const FigureSizeOptions sizeOpts;
    QCommandLineOption noNumbersOpt(QStringLiteral("no-numbers"), QStringLiteral("No numbers in the heatmap cells."));
    QCommandLineOption tokenOpt(QStringLiteral("token"),
                                QStringLiteral("--view dla: the token attributed (a vocabulary spelling, or text that is one "
                                               "token); default: the predicted one. --query picks the position (default: the last)."),
                                QStringLiteral("text"));
    QCommandLineOption publicationOpt(QStringLiteral("publication"),
                                      QStringLiteral("A figure for a paper: every token labelled where text down to 6 px "
                                                     "allows (else every k-th, said on the axis), none of the window's "
                                                     "hints, the title one line of what is shown."));
    QCommandLineOption titleOpt(QStringLiteral("title"), QStringLiteral("The figure's title (implies --publication)."),
                                QStringLiteral("text"));
    QCommandLineOption noTitleOpt(QStringLiteral("no-title"), QStringLiteral("No title (implies --publication)."));
    QCommandLineOption fontSizeOpt(QStringLiteral("font-size"),
                                   QStringLiteral("Axis text in points, titles a little larger (implies --publication)."),
                                   QStringLiteral("pt"));
    p.addOptions({sentOpt, keyOpt, viewOpt, headsOpt, dHeadOpt, headOpt, queryOpt, maskOpt, padOpt, methodOpt, scaleOpt,
                  tempOpt, normOpt, projOpt, seedOpt, dropOpt, dropSeedOpt, embOpt, outOpt});
    p.addOptions(sizeOpts.options());
    p.addOptions({noNumbersOpt, tokenOpt, publicationOpt, titleOpt, noTitleOpt, fontSizeOpt, targetOpt});
    QCommandLineOption modelOpt(QStringLiteral("model"),
                                QStringLiteral("A model folder (model_type one of %1) or `bundled` (attnviz-tiny 2; "
                                               "`bundled-gpt2`: attnviz-tiny; `bundled-dates`: attnviz-dates) instead of the word vectors; the "
                                               "word-vector options then do not apply.")
                                    .arg(modelFamilies()),
                                QStringLiteral("dir"));
    QCommandLineOption layerOpt(QStringLiteral("layer"), QStringLiteral("Layer shown, with --model (default 0)."),
                                QStringLiteral("l"), QStringLiteral("0"));
    QCommandLineOption normWeightedOpt(QStringLiteral("norm-weighted"),
                                       QStringLiteral("weights, grid, row, lines: ||a_ij v_j W_O^h|| (Kobayashi et al. 2020) "
                                                      "instead of the weights, figure and matrices."));
    const QCommandLineOption ablateOpt = ablateOption(QStringLiteral("with --model: every view and matrix is the edited model's"));
    QCommandLineOption allLayersOpt(QStringLiteral("all-layers"),
                                    QStringLiteral("Every layer's and head's weights in one file (.npy: layers x heads x queries "
                                                   "x keys, float32; .csv: a row per weight; .json: with the tokens and their "
                                                   "positions). --view, --layer and --head do not apply."));
    p.addOptions({modelOpt, layerOpt, normWeightedOpt, ablateOpt, allLayersOpt});
    QCommandLineOption attentionOpt(QStringLiteral("attention"),
                                    QStringLiteral("--view pipeline: the encoder's self-attention (encoder), the decoder's "
                                                   "(decoder) or the cross-attention (cross, the default)."),
                                    QStringLiteral("which"), QStringLiteral("cross"));
    QCommandLineOption stageOpt(QStringLiteral("stage"),
                                QStringLiteral("--view pipeline: the stage, by number (1, 2, …) or name (weights, the default; "
                                               "\"raw scores\" or raw-scores; …). A figure, or its numbers (every row and "
                                               "column) as .csv .npy .json."),
                                QStringLiteral("stage"));
    p.addOptions({attentionOpt, stageOpt});
    p.addOptions(languageOptions());
    QCommandLineOption presetOpt(QStringLiteral("preset"),
                                 QStringLiteral("A lesson (`attnviz window --preset list`), with --slides."), QStringLiteral("id"));
    QCommandLineOption slidesOpt(QStringLiteral("slides"),
                                 QStringLiteral("Write the lesson --preset ID as slides into DIR: one PNG per pipeline step (and "
                                                "the view it opens on) in presentation styling, and ID.pdf with them all."),
                                 QStringLiteral("dir"));
    QCommandLineOption slideSizeOpt(QStringLiteral("slide-size"), QStringLiteral("Slide size WxH (default 1920x1080)."),
                                    QStringLiteral("WxH"), QStringLiteral("1920x1080"));
    p.addOptions({presetOpt, slidesOpt, slideSizeOpt});
    if (!p.parse(args))
        return fail("export", p.errorText(), 2);
    if (p.isSet(QStringLiteral("help"))) {
        std::fputs(qPrintable(p.helpText()), stdout);
        return 0;
    }
    if (p.isSet(slidesOpt) || p.isSet(presetOpt)) {
        if (!p.isSet(slidesOpt) || !p.isSet(presetOpt))
            return fail("export", QStringLiteral("--preset and --slides go together: --preset ID --slides DIR"), 2);
        const QStringList wh = p.value(slideSizeOpt).split(QLatin1Char('x'));
        const int sw = wh.size() == 2 ? wh[0].toInt() : 0, sh = wh.size() == 2 ? wh[1].toInt() : 0;
        if (sw < 640 || sh < 360 || sw > 7680 || sh > 4320)
            return fail("export", QStringLiteral("--slide-size %1: expected WxH from 640x360 to 7680x4320").arg(p.value(slideSizeOpt)), 2);
        if (!ui::findPreset(p.value(presetOpt)))
            return fail("export", QStringLiteral("--preset: no lesson %1 (`attnviz window --preset list` lists them)").arg(p.value(presetOpt)), 2);
        // the offscreen platform says at each dock's layout that it cannot pass size hints on: not the
        // user's concern on the command line
        static QtMessageHandler previous = nullptr;
        previous = qInstallMessageHandler([](QtMsgType type, const QMessageLogContext &context, const QString &msg) {
            if (!msg.startsWith(QLatin1String("This plugin does not support")) && previous)
                previous(type, context, msg);
        });
        ui::MainWindow w;
        w.session()->setDebounceMs(0);
        ui::SlideOptions so;
        so.size = QSize(sw, sh);
        QString error;
        const QStringList files = ui::writeLessonSlides(w, p.value(presetOpt), p.value(slidesOpt), so, &error);
        if (files.isEmpty())
            return fail("export", error, 1);
        for (const QString &f : files)
            std::printf("%s\n", qPrintable(f));
        return 0;
    }
    if (!p.isSet(sentOpt))
        return fail("export", QStringLiteral("--sentence is required"), 2);
    if (!p.isSet(outOpt))
        return fail("export", QStringLiteral("--out is required (.png .svg .pdf .csv .npy .json)"), 2);
    const QString out = p.value(outOpt);
    const QString suffix = QFileInfo(out).suffix().toLower();
    if (!ui::isFigureSuffix(suffix) && !ui::isMatrixSuffix(suffix))
        return fail("export", QStringLiteral("--out %1: unknown format (use .png .svg .pdf .csv .npy .json)").arg(out), 2);

    if (p.isSet(allLayersOpt)) {
        if (!ui::isMatrixSuffix(suffix))
            return fail("export", QStringLiteral("--all-layers writes numbers: .npy, .csv or .json, not .%1").arg(suffix), 2);
        for (const QCommandLineOption *o : {&viewOpt, &layerOpt, &headOpt, &queryOpt})
            if (p.isSet(*o))
                return fail("export", QStringLiteral("--all-layers writes every layer and head: --%1 does not apply").arg(o->names().constFirst()), 2);
    }
    ui::ExportView view = ui::ExportView::Weights;
    const bool readsView = isReadsView(p.value(viewOpt)); // the logit lens, attribution: readexport.cpp
    const bool seq2seqView = isSeq2SeqView(p.value(viewOpt)); // cross, alignment: seq2seqexport.cpp
    if (!viewIds.contains(p.value(viewOpt)) || (!readsView && !seq2seqView && !ui::parseExportView(p.value(viewOpt), view)))
        return fail("export", QStringLiteral("--view %1: expected %2").arg(p.value(viewOpt), ui::idChoices(viewIds)), 2);
    const bool pipelineView = p.value(viewOpt) == QLatin1String("pipeline");
    for (const QCommandLineOption *o : {&attentionOpt, &stageOpt})
        if (p.isSet(*o) && !pipelineView)
            return fail("export", QStringLiteral("--%1: for --view pipeline, not --view %2").arg(o->names().constFirst(), p.value(viewOpt)), 2);
    cli::PipelineChoice pipeline;
    pipeline.stage = p.value(stageOpt);
    if (p.value(attentionOpt) == QLatin1String("encoder"))
        pipeline.kind = AttentionKind::Encoder;
    else if (p.value(attentionOpt) == QLatin1String("decoder"))
        pipeline.kind = AttentionKind::Self;
    else if (p.value(attentionOpt) != QLatin1String("cross"))
        return fail("export", QStringLiteral("--attention %1: expected encoder, decoder or cross").arg(p.value(attentionOpt)), 2);
    if (seq2seqView && p.isSet(allLayersOpt))
        return fail("export", QStringLiteral("--all-layers writes the weights of every layer: not with --view %1").arg(p.value(viewOpt)), 2);
    // the alignment's --layer and --head may be the mean (avg), as its tab's; cross's --head may
    const auto meanChoice = [&](const QCommandLineOption &o) {
        return p.value(o) == QLatin1String("avg") || p.value(o) == QLatin1String("average") || p.value(o) == QLatin1String("mean");
    };
    const bool alignmentView = p.value(viewOpt) == QLatin1String("alignment");
    const bool meanLayer = alignmentView && (!p.isSet(layerOpt) || meanChoice(layerOpt));

    auto intOpt = [&](const QCommandLineOption &o, int lo, int hi, int &v) {
        bool ok = false;
        v = p.value(o).toInt(&ok);
        return ok && v >= lo && v <= hi;
    };
    auto dblOpt = [&](const QCommandLineOption &o, double lo, double hi, double &v) {
        bool ok = false;
        v = p.value(o).toDouble(&ok);
        return ok && v >= lo && v <= hi;
    };
    ui::ComputeRequest req;
    ui::ComputeSettings &s = req.settings;
    int heads = 1, dHead = 0, query = 0, seed = 0, dropSeed = 0;
    double temperature = 1, dropout = 0;
    if (!intOpt(headsOpt, 1, 256, heads))
        return fail("export", QStringLiteral("--heads: expected 1..256"), 2);
    if (!intOpt(dHeadOpt, 0, 4096, dHead))
        return fail("export", QStringLiteral("--d-head: expected 0..4096"), 2);
    if (!intOpt(queryOpt, 0, 1 << 30, query))
        return fail("export", QStringLiteral("--query: expected a token index"), 2);
    ui::FigureOptions figure;
    if (QString error; !sizeOpts.read(p, figure, &error))
        return fail("export", error, 2);
    figure.publication = p.isSet(publicationOpt) || p.isSet(titleOpt) || p.isSet(noTitleOpt) || p.isSet(fontSizeOpt);
    figure.title = p.value(titleOpt);
    figure.noTitle = p.isSet(noTitleOpt);
    if (figure.noTitle && p.isSet(titleOpt))
        return fail("export", QStringLiteral("--title and --no-title: give one"), 2);
    if (p.isSet(fontSizeOpt) && !dblOpt(fontSizeOpt, 4, 72, figure.fontPt))
        return fail("export", QStringLiteral("--font-size: expected 4..72 points"), 2);
    if (!dblOpt(tempOpt, 1e-3, 1e3, temperature))
        return fail("export", QStringLiteral("--temperature: expected a number in 0.001..1000"), 2);
    if (!dblOpt(dropOpt, 0, 0.99, dropout))
        return fail("export", QStringLiteral("--dropout: expected 0..0.99"), 2);
    if (!intOpt(seedOpt, 0, 1 << 30, seed) || !intOpt(dropSeedOpt, 0, 1 << 30, dropSeed))
        return fail("export", QStringLiteral("--seed/--dropout-seed: expected a non-negative integer"), 2);
    int layer = 0;
    if (p.isSet(modelOpt)) {
        QString error;
        if (!openModel(p.value(modelOpt), req.model, &error, true)) // an encoder-decoder model: refused below but for cross|alignment
            return fail("export", error, 2);
        const ModelInfo info = req.model->info();
        heads = std::max(1, info.heads); // the model's own; --heads is the word vectors'
        if (info.architecture.encoderDecoder && !seq2seqView && !readsView)
            return fail("export", QStringLiteral("--view %1: %2 is an encoder-decoder model (%3): export draws its cross-attention "
                                                 "(--view cross), its word alignment (--view alignment) and its decoder's logit "
                                                 "lens and attribution (--view lens, --view dla)")
                                      .arg(p.value(viewOpt), QString::fromStdString(info.name), QString::fromStdString(info.family)),
                        2);
        if (p.isSet(targetOpt) && !info.architecture.encoderDecoder)
            return fail("export", QStringLiteral("--target: only encoder-decoder models (t5, bart, mbart, marian) read a target; %1 is %2")
                                      .arg(QString::fromStdString(info.name), QString::fromStdString(info.family)),
                        2);
        if (meanLayer)
            layer = -1;
        else if (!intOpt(layerOpt, 0, std::max(0, info.layers - 1), layer))
            return fail("export", QStringLiteral("--layer %1: %2 has layers 0..%3")
                                      .arg(p.value(layerOpt), QString::fromStdString(info.name))
                                      .arg(info.layers - 1),
                        2);
        if (Status st = ablations(p.values(ablateOpt), info, req.edits); !st)
            return fail("export", QString::fromStdString(st.message), 2);
        if (Status st = applyLanguages(p, *req.model); !st)
            return fail("export", QString::fromStdString(st.message), 2);
        if (!req.edits.empty()) // the same one-line refusal as the window's menu for a model that cannot be edited
            if (const QString why = ui::editsRefusal(info, true); !why.isEmpty())
                return fail("export", QStringLiteral("--ablate: ") + why, 2);
    } else if (seq2seqView || p.isSet(targetOpt)) {
        return fail("export", seq2seqView ? seq2seqViewRefusal(p.value(viewOpt), ui::ComputeSnapshot())
                                          : QStringLiteral("--target: only encoder-decoder models (t5, bart, mbart, marian) read a target; "
                                                           "give --model DIR of one"),
                    2);
    } else if (!intOpt(layerOpt, 0, 0, layer)) {
        return fail("export", QStringLiteral("--layer: the word-vector attention has one layer (0); --model DIR has more"), 2);
    } else if (p.isSet(ablateOpt)) {
        return fail("export", QStringLiteral("--ablate: ") + ui::editsRefusal(ModelInfo(), false), 2);
    }
    s.numHeads = heads;
    s.dHead = dHead;
    s.temperature = temperature;
    s.dropout = dropout;
    s.dropoutSeed = quint64(dropSeed);
    s.projectionSeed = quint64(seed);

    const QString scale = p.value(scaleOpt);
    if (scale == QLatin1String("inv_sqrt_dhead"))
        s.scaleRule = ScaleRule::InvSqrtDHead;
    else if (scale == QLatin1String("inv_sqrt_dmodel"))
        s.scaleRule = ScaleRule::InvSqrtDModel;
    else if (scale == QLatin1String("none"))
        s.scaleRule = ScaleRule::None;
    else if (scale == QLatin1String("temperature"))
        s.scaleRule = ScaleRule::Temperature;
    else
        return fail("export", QStringLiteral("--scale %1: expected inv_sqrt_dhead, inv_sqrt_dmodel, none or temperature").arg(scale), 2);
    const QString norm = p.value(normOpt);
    if (norm == QLatin1String("softmax"))
        s.normalization = Normalization::Softmax;
    else if (norm == QLatin1String("sum"))
        s.normalization = Normalization::Sum;
    else if (norm == QLatin1String("cosine"))
        s.normalization = Normalization::Cosine;
    else
        return fail("export", QStringLiteral("--norm %1: expected softmax, sum or cosine").arg(norm), 2);
    const QString mask = p.value(maskOpt);
    if (mask == QLatin1String("none"))
        s.mask = ui::MaskChoice::None;
    else if (mask == QLatin1String("causal"))
        s.mask = ui::MaskChoice::Causal;
    else if (mask == QLatin1String("padding"))
        s.mask = ui::MaskChoice::Padding;
    else if (mask == QLatin1String("causal+padding"))
        s.mask = ui::MaskChoice::CausalPadding;
    else
        return fail("export", QStringLiteral("--mask %1: expected none, causal, padding or causal+padding").arg(mask), 2);
    const QString method = p.value(methodOpt);
    if (method == QLatin1String("neg_inf"))
        s.maskMethod = MaskMethod::NegInf;
    else if (method == QLatin1String("renormalize"))
        s.maskMethod = MaskMethod::MultiplyRenormalize;
    else
        return fail("export", QStringLiteral("--mask-method %1: expected neg_inf or renormalize").arg(method), 2);
    if (p.isSet(padOpt)) {
        for (const QString &part : p.value(padOpt).split(QLatin1Char(','), Qt::SkipEmptyParts)) {
            bool ok = false;
            const int j = part.trimmed().toInt(&ok);
            if (!ok || j < 0)
                return fail("export", QStringLiteral("--pad: expected token indices like 0,3"), 2);
            req.paddedKeys.insert(j);
        }
    }
    const QString proj = p.value(projOpt);
    if (proj == QLatin1String("identity")) {
        s.projection = ui::ProjectionMode::Identity;
    } else if (proj == QLatin1String("random")) {
        s.projection = ui::ProjectionMode::Random;
    } else {
        auto loaded = std::make_shared<Projections<float>>();
        const Status st = ui::loadProjectionsFile(proj, *loaded);
        if (!st.ok())
            return fail("export", QString::fromStdString(st.message), 2);
        s.projection = ui::ProjectionMode::File;
        s.loadedProjections = loaded;
        s.projectionSource = QFileInfo(proj).fileName();
    }

    auto table = std::make_shared<EmbeddingTable>();
    if (req.model) {
        // the model reads its own token embeddings
    } else if (p.isSet(embOpt)) {
        const Status st = loadEmbeddings(p.value(embOpt).toStdString(), *table);
        if (!st.ok())
            return fail("export", QString::fromStdString(st.message), 2);
    } else {
        const Status st = loadBundledEmbeddings(*table);
        if (!st.ok())
            return fail("export", QString::fromStdString(st.message) + QStringLiteral(" (pass --embeddings FILE)"), 2);
    }
    if (!req.model)
        req.table = table;
    req.sentence = p.value(sentOpt);
    req.keySentence = p.value(keyOpt);
    req.target = p.value(targetOpt);
    req.generation = 1;

    int head = 0;
    if (meanChoice(headOpt) || (alignmentView && !p.isSet(headOpt))) {
        head = -1;
    } else if (!intOpt(headOpt, 0, heads - 1, head)) {
        return fail("export", QStringLiteral("--head %1: expected 0..%2 or avg").arg(p.value(headOpt)).arg(heads - 1), 2);
    }

    CpuBackend backend;
    ui::LiveModels models;
    ui::SnapshotPtr snap = ui::computeSnapshot(req, backend, models);
    if (!snap->hasResult()) {
        // A figure of an empty sentence is the explained, empty view; anything else is an error.
        const bool emptySentence = snap->sentence.trimmed().isEmpty();
        if (ui::isMatrixSuffix(suffix) || !emptySentence)
            return fail("export", snap->message, 2);
    }
    if (snap->hasResult() && snap->trace->cut() && !snap->trace->cutReason.empty())
        std::fprintf(stderr, "attnviz export: note: the text has %d tokens; the figure shows the first %d (%s)\n",
                     snap->totalQueryTokens, snap->tq(), snap->trace->cutReason.c_str());
    else if (snap->hasResult() && snap->truncated())
        std::fprintf(stderr, "attnviz export: note: the sentence has %d tokens; the figure shows the first %d (the "
                             "live limit for %d heads, as in the window)\n",
                     std::max(snap->totalQueryTokens, snap->totalKeyTokens), std::max(snap->tq(), snap->tk()),
                     s.numHeads);
    if (p.isSet(normWeightedOpt)) {
        if (readsView || seq2seqView || view == ui::ExportView::Embeddings)
            return fail("export", QStringLiteral("--norm-weighted: for the attention views (weights, grid, row, lines), not %1")
                                      .arg(p.value(viewOpt)), 2);
        QString why;
        if (snap->hasResult()) {
            snap = ui::normWeightedSnapshot(snap, &why);
            if (!snap)
                return fail("export", QStringLiteral("--norm-weighted: %1").arg(why), 2);
        }
    }
    if (seq2seqView) {
        if (const QString why = seq2seqViewRefusal(p.value(viewOpt), *snap); !why.isEmpty())
            return fail("export", why, 2);
        return exportSeq2SeqView(p.value(viewOpt), snap, layer, head, !p.isSet(noNumbersOpt), out,
                                 figure, pipeline);
    }
    if (readsView)
        return exportReadsView(p.value(viewOpt), snap, p.isSet(queryOpt) ? query : -1, p.value(tokenOpt), out, figure);
    if (snap->hasResult() && view == ui::ExportView::Row && query >= snap->tq())
        return fail("export", QStringLiteral("--query %1: the sentence has %2 tokens").arg(query).arg(snap->tq()), 2);

    QString error;
    if (p.isSet(allLayersOpt)) {
        if (!ui::saveAllLayers(*snap, out, &error))
            return fail("export", error, 1);
        return 0;
    }
    if (ui::isMatrixSuffix(suffix)) {
        if (!ui::saveMatrices(*snap, view, layer, head, query, out, &error))
            return fail("export", error, 1);
        return 0;
    }
    const ui::HeadDisplay display = view == ui::ExportView::Grid ? ui::HeadDisplay::All
                                    : head < 0                 ? ui::HeadDisplay::Average
                                                               : ui::HeadDisplay::One;
    const QSize logical = figureWidgetSize(figure, suffix);
    // the view as the window makes it (views/viewregistry.h), offscreen
    std::unique_ptr<ui::View> widget(ui::findViewSpec(p.value(viewOpt))->make(ui::ViewContext(), nullptr));
    if (auto *heatmap = qobject_cast<ui::HeatmapView *>(widget.get()))
        heatmap->setShowNumbers(!p.isSet(noNumbersOpt));
    widget->setHeadDisplay(display);
    widget->setSnapshot(snap);
    // all heads: no panel highlighted; only the row shows a query
    widget->setSelection(layer, view == ui::ExportView::Grid ? -2 : head, view == ui::ExportView::Row ? query : -1);
    QCustomPlot *plot = widget->plot();
    widget->resize(logical);
    widget->ensurePolished();
    plot->replot(QCustomPlot::rpImmediateRefresh);
    if (!ui::saveFigure(plot, out, figure, &error))
        return fail("export", error, 1);
    return 0;
}

namespace {

// A model of one shape with another model's tokenizer, for the benchmark only: seededPretrained()
// has no tokenizer of its own (its trace takes ids), and the window types text. The text is
// tokenized by `tokenizer` (the bundled model's or a folder's) and the ids traced by `model`; the
// tokenizer's ids must lie in the model's vocabulary (GPT-2 small's 50,257 hold any of them).
class TokenizedBy final : public Model {
public:
    TokenizedBy(std::shared_ptr<Model> tokenizer, std::unique_ptr<Model> model, std::string name)
        : m_tok(std::move(tokenizer))
        , m_model(std::move(model))
        , m_name(std::move(name))
    {
    }
    ModelInfo info() const override
    {
        ModelInfo i = m_model->info();
        i.name = m_name;
        i.tokenizer = m_tok->info().tokenizer;
        return i;
    }
    Status tokenize(std::string_view text, std::vector<TraceToken> &out) const override { return m_tok->tokenize(text, out); }
    Status trace(const TraceRequest &request, Trace<float> &out) override
    {
        std::vector<TraceToken> tokens;
        if (Status st = m_tok->tokenize(request.text, tokens); !st)
            return st;
        TraceRequest r = request;
        r.text.clear();
        r.ids.clear();
        for (const TraceToken &t : tokens)
            r.ids.push_back(t.id);
        if (Status st = m_model->trace(r, out); !st)
            return st;
        for (size_t i = 0; i < out.tokens.size() && i < tokens.size(); ++i)
            out.tokens[i] = tokens[i]; // the pieces as text, for the chips (same ids)
        return {};
    }
    using Model::nextTokens; // the float64 ones: none (Model's answer)
    using Model::predictAt;
    using Model::trace;
    Status predictAt(Trace<float> &trace, int position) const override { return m_model->predictAt(trace, position); }
    Status nextTokens(const Trace<float> &trace, int position, NextTokens &out) const override
    {
        return m_model->nextTokens(trace, position, out);
    }
    std::shared_ptr<const ReadoutWeights> readout() const override { return m_model->readout(); } // the lens, generation
    // an id beyond the tokenizer's vocabulary (the shape's is larger) is written as the tokenizer's
    // id modulo its size: generation appends one token of text per step, as with the real tokenizer
    std::string decode(const std::vector<int> &ids) const override
    {
        const int n = std::max(1, m_tok->info().vocabulary);
        std::vector<int> inVocabulary;
        for (int id : ids)
            inVocabulary.push_back(id % n);
        std::string text = m_tok->decode(inVocabulary);
        for (int k = 1; text.empty() && k < 64; ++k) // a special token: the next one with text
            text = m_tok->decode({(inVocabulary.empty() ? 0 : inVocabulary.front() + k) % n});
        return text;
    }

private:
    std::shared_ptr<Model> m_tok;
    std::unique_ptr<Model> m_model;
    std::string m_name;
};

// A deterministic table of `dim`-wide vectors for words w0 .. w{n-1}, for the benchmark only.
std::shared_ptr<EmbeddingTable> benchTable(int n, int dim)
{
    std::vector<std::string> words;
    Mat<float> m(n, dim);
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0.f, 0.3f);
    for (int i = 0; i < n; ++i) {
        words.push_back("w" + std::to_string(i));
        for (int d = 0; d < dim; ++d)
            m(i, d) = nd(rng);
    }
    auto t = std::make_shared<EmbeddingTable>();
    t->assign(std::move(words), std::move(m), "bench table (random, 768-d)");
    return t;
}

} // namespace

namespace {

// Where a keystroke's time goes on the GUI thread (`bench --ui --profile`): every event delivered at
// the top of the event loop (not inside another one), timed (wall and this thread's CPU time: on a
// loaded machine the wall clock also counts waiting for a core) and summed by receiver (its object
// name, else its class) and event type. Below them, the paints and resizes delivered inside those
// events, by widget: what a replot's immediate repaint or a layout drew. The filter delivers the
// event itself so that it can time it; input events (keys, mouse), which QApplication routes to
// parents and shortcuts, are counted but not timed.
class EventProfile : public QObject {
public:
    void start() { qApp->installEventFilter(this); }
    void stop() { qApp->removeEventFilter(this); }
    void nextKeystroke() { ++m_keystrokes; }
    void print() const
    {
        std::vector<std::pair<double, QString>> rows;
        double total = 0, cpu = 0;
        for (auto it = m_ms.begin(); it != m_ms.end(); ++it) {
            rows.emplace_back(it.value(), it.key());
            total += it.value();
            cpu += m_cpu.value(it.key());
        }
        std::sort(rows.rbegin(), rows.rend());
        const double n = std::max(1, m_keystrokes);
        std::printf("  GUI thread per keystroke (mean of %d): %.2f ms in timed events (%.2f ms CPU)\n", m_keystrokes,
                    total / n, cpu / n);
        for (const auto &r : rows)
            if (r.first / n >= 0.05)
                std::printf("  %8.2f ms %8.2f cpu %6.1f x  %s\n", r.first / n, m_cpu.value(r.second) / n,
                            m_count.value(r.second) / n, qPrintable(r.second));
        std::printf("  inside them (CPU ms):\n");
        for (auto it = m_inner.begin(); it != m_inner.end(); ++it)
            if (it.value() / n >= 0.03)
                std::printf("           %8.2f cpu %6.1f x  %s\n", it.value() / n, m_innerCount.value(it.key()) / n,
                            qPrintable(it.key()));
    }

protected:
    bool eventFilter(QObject *o, QEvent *e) override
    {
        if (m_depth > 0) {
            if ((e->type() != QEvent::Paint && e->type() != QEvent::Resize) || e == m_inside)
                return false; // (e == m_inside: the event this filter is delivering)
            QEvent *outer = m_inside;
            m_inside = e;
            const double cpu0 = threadCpuMs();
            QCoreApplication::instance()->notify(o, e);
            const QString name = nameOf(o, e);
            m_inner[name] += threadCpuMs() - cpu0;
            m_innerCount[name] += 1;
            m_inside = outer;
            return true;
        }
        switch (e->type()) {
        case QEvent::KeyPress: case QEvent::KeyRelease: case QEvent::ShortcutOverride: case QEvent::MouseMove:
        case QEvent::MouseButtonPress: case QEvent::MouseButtonRelease: case QEvent::Wheel: case QEvent::InputMethod:
            return false;
        default: break;
        }
        const QString name = nameOf(o, e);
        QElapsedTimer t;
        t.start();
        const double cpu0 = threadCpuMs();
        ++m_depth;
        QCoreApplication::instance()->notify(o, e);
        --m_depth;
        m_ms[name] += double(t.nsecsElapsed()) / 1e6;
        m_cpu[name] += threadCpuMs() - cpu0;
        m_count[name] += 1;
        return true;
    }

private:
    static double threadCpuMs()
    {
        timespec ts{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
    }
    static QString nameOf(const QObject *o, const QEvent *e)
    {
        auto named = [](const QObject *x) {
            return x->objectName().isEmpty() ? QString::fromLatin1(x->metaObject()->className()) : x->objectName();
        };
        QString name = named(o);
        // Qt's own parts (a scroll area's viewport) by what holds them
        for (const QObject *up = o->parent(); up && o->objectName().startsWith(QLatin1String("qt_")); up = up->parent()) {
            name += QLatin1String(" in ") + named(up);
            if (!up->objectName().isEmpty() && !up->objectName().startsWith(QLatin1String("qt_")))
                break;
        }
        return name + QLatin1Char(' ') + QString::fromLatin1(QMetaEnum::fromType<QEvent::Type>().valueToKey(e->type()));
    }

    int m_depth = 0, m_keystrokes = 0;
    QEvent *m_inside = nullptr;
    QMap<QString, double> m_ms, m_cpu, m_inner;
    QMap<QString, int> m_count, m_innerCount;
};

// Each visible plot's replot alone (the median of 9, ms): what one snapshot costs it, no paint.
void printReplotTimes(ui::MainWindow &w)
{
    std::printf("  replot alone (median of 9):");
    for (QCustomPlot *plot : w.findChildren<QCustomPlot *>()) {
        if (!plot->isVisible())
            continue;
        std::vector<double> t;
        for (int r = 0; r < 9; ++r) {
            plot->replot(QCustomPlot::rpQueuedRefresh);
            t.push_back(plot->replotTime());
        }
        std::sort(t.begin(), t.end());
        std::printf(" %s %.2f", qPrintable(plot->objectName().isEmpty() ? QStringLiteral("plot") : plot->objectName()), t[4]);
    }
    std::printf("\n");
}

// Times a key press in the sentence editor -> `plot` replotted after the views got the snapshot that
// key made, and painted. Waits as the application does: blocked in the event loop (a 120 s guard).
class KeystrokeTimer {
public:
    KeystrokeTimer(ui::MainWindow &w, QCustomPlot *plot)
        : m_w(w)
    {
        m_guard.setSingleShot(true);
        m_guard.setInterval(120000);
        QObject::connect(&m_guard, &QTimer::timeout, &m_loop, &QEventLoop::quit);
        setPlot(plot);
        QObject::connect(&w, &ui::MainWindow::viewsUpdated, &m_loop, [this](quint64 g) {
            m_seen = g;
            m_viewsAt = double(m_t.nsecsElapsed()) / 1e6;
            m_replotted = false; // the replot that counts is the one after these views got the snapshot
            check();
        });
    }
    void setPlot(QCustomPlot *plot)
    {
        QObject::disconnect(m_connection);
        m_plot = plot;
        m_connection = QObject::connect(plot, &QCustomPlot::afterReplot, &m_loop, [this] {
            m_replotted = true;
            check();
        });
    }
    // Presses and releases `key` (typing `text`); the milliseconds until the plot is painted.
    Q_NEVER_INLINE double type(int key, const QString &text) // (not inlined: a profiler can collect inside it)
    {
        QKeyEvent press(QEvent::KeyPress, key, Qt::NoModifier, text);
        QKeyEvent release(QEvent::KeyRelease, key, Qt::NoModifier, text);
        return time([&] {
            QCoreApplication::sendEvent(m_w.sentenceEdit(), &press);
            QCoreApplication::sendEvent(m_w.sentenceEdit(), &release);
        });
    }
    // Does `act` (a key press, a menu action); the milliseconds until the plot is painted again.
    Q_NEVER_INLINE double time(const std::function<void()> &act)
    {
        m_replotted = false;
        m_before = m_seen;
        m_t.start();
        act();
        m_guard.start();
        m_loop.exec();
        m_guard.stop();
        // the paint that puts the replotted buffer on screen: a plot with QCP::phImmediateRefresh (the
        // default) has painted within its replot, before afterReplot; painting it again would count
        // one paint twice
        if (!m_plot->plottingHints().testFlag(QCP::phImmediateRefresh))
            m_plot->repaint();
        return double(m_t.nsecsElapsed()) / 1e6;
    }
    double viewsAtMs() const { return m_viewsAt; } // key press -> every view held the snapshot

private:
    void check()
    {
        if (m_seen != m_before && m_replotted)
            m_loop.quit();
    }
    ui::MainWindow &m_w;
    QCustomPlot *m_plot = nullptr;
    QMetaObject::Connection m_connection;
    QEventLoop m_loop;
    QTimer m_guard;
    QElapsedTimer m_t;
    bool m_replotted = false;
    quint64 m_seen = 0, m_before = 0;
    double m_viewsAt = 0;
};

int benchUiModel(const QCommandLineParser &p, const QCommandLineOption &modelOpt, const QCommandLineOption &seededOpt,
                 const QCommandLineOption &tokenizerOpt, const QCommandLineOption &tokensOpt, int reps, bool profile);

} // namespace

int benchUi(const QStringList &args)
{
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "Times keystroke -> repainted heatmap in the real window (offscreen): a key press in the editor,\n"
        "the compute on the worker thread, the snapshot reaching the views, the heatmap's replot and paint.\n"
        "The ~30 ms typing debounce is switched off for the measurement. 12 heads, d_model 768, random\n"
        "projections (nn.Linear init), softmax, 1/sqrt(d_head)."));
    p.addHelpOption();
    QCommandLineOption uiOpt(QStringLiteral("ui"), QStringLiteral("The UI benchmark (this one)."));
    QCommandLineOption sizesOpt(QStringLiteral("sizes"), QStringLiteral("Token counts (default 16,128,512,2048)."),
                                QStringLiteral("list"), QStringLiteral("16,128,512,2048"));
    QCommandLineOption repsOpt(QStringLiteral("reps"), QStringLiteral("Keystrokes per size (default 15)."),
                               QStringLiteral("n"), QStringLiteral("15"));
    QCommandLineOption depthOpt(QStringLiteral("depth"),
                                QStringLiteral("Transformer stack depth (default 1: the single attention layer); 2 or more "
                                               "times a stack of seeded post-norm blocks, every layer kept."),
                                QStringLiteral("n"), QStringLiteral("1"));
    QCommandLineOption viewOpt(QStringLiteral("view"),
                               QStringLiteral("View timed: weights (default), or with --depth 2+: layers (the layers x "
                                              "heads grid), residual."),
                               QStringLiteral("view"), QStringLiteral("weights"));
    QCommandLineOption modelOpt(QStringLiteral("model"),
                                QStringLiteral("Time a model folder (or `bundled`) instead: one character appended at the "
                                               "end, and a full recompute (a character typed at the start)."),
                                QStringLiteral("dir"));
    QCommandLineOption seededOpt(QStringLiteral("seeded"),
                                 QStringLiteral("Time a real checkpoint's shape with seeded weights (gpt2-small, bert-base, "
                                                "smollm2-135m, qwen3-0.6b, llama3.2-1b), tokenized by --tokenizer."),
                                 QStringLiteral("shape"));
    QCommandLineOption tokenizerOpt(QStringLiteral("tokenizer"),
                                    QStringLiteral("With --seeded: the model folder whose tokenizer types the text (default "
                                                   "bundled; its ids must fit the shape's vocabulary)."),
                                    QStringLiteral("dir"), QStringLiteral("bundled"));
    QCommandLineOption tokensOpt(QStringLiteral("tokens"), QStringLiteral("With --model/--seeded: token counts (default 256)."),
                                 QStringLiteral("list"), QStringLiteral("256"));
    QCommandLineOption profileOpt(QStringLiteral("profile"),
                                  QStringLiteral("Also print where the GUI thread's time goes per keystroke: events by "
                                                 "receiver and type (replots, paints, the snapshot reaching the views)."));
    p.addOptions({uiOpt, sizesOpt, repsOpt, depthOpt, viewOpt, modelOpt, seededOpt, tokenizerOpt, tokensOpt, profileOpt});
    if (!p.parse(args))
        return fail("bench", p.errorText(), 2);
    if (p.isSet(QStringLiteral("help"))) {
        std::fputs(qPrintable(p.helpText()), stdout);
        return 0;
    }
    if (p.isSet(modelOpt) || p.isSet(seededOpt))
        return benchUiModel(p, modelOpt, seededOpt, tokenizerOpt, tokensOpt, std::max(3, p.value(repsOpt).toInt()),
                            p.isSet(profileOpt));
    std::vector<int> sizes;
    for (const QString &s : p.value(sizesOpt).split(QLatin1Char(','), Qt::SkipEmptyParts))
        sizes.push_back(s.toInt());
    const int reps = std::max(3, p.value(repsOpt).toInt());
    const int depth = std::clamp(p.value(depthOpt).toInt(), 1, 48);

    ui::MainWindow w;
    w.resize(1600, 1000);
    w.show();
    w.session()->setDebounceMs(0);
    auto table = benchTable(4096, 768);
    w.setEmbeddingTable(table, QStringLiteral("bench table"));
    ui::ComputeSettings s = w.controls()->settings();
    s.numHeads = 12;
    s.projection = ui::ProjectionMode::Random;
    s.projectionSeed = 0;
    s.stack.depth = depth;
    w.controls()->setSettings(s);

    QCustomPlot *timed = w.heatmapView()->plot();
    QWidget *timedTab = nullptr; // shown once the stack's tabs are (after the first stack snapshot)
    if (p.value(viewOpt) == QLatin1String("layers") || p.value(viewOpt) == QLatin1String("residual")) {
        if (depth < 2)
            return fail("bench", QStringLiteral("--view %1 needs --depth 2 or more").arg(p.value(viewOpt)), 2);
        const bool layers = p.value(viewOpt) == QLatin1String("layers");
        timed = layers ? w.layerGridView()->plot() : w.residualView()->plot();
        timedTab = layers ? static_cast<QWidget *>(w.layerGridView()) : w.residualView();
        std::printf("timed view: %s\n", layers ? "layers x heads grid" : "residual stream");
    }
    KeystrokeTimer timer(w, timed);

    const QString what = depth > 1 ? QStringLiteral("a stack of %1 seeded post-norm ReLU blocks, every layer kept").arg(depth)
                                   : QStringLiteral("random projections");
    std::printf("keystroke -> repainted %s (12 heads, d_model 768, d_head 64, %s; median of %d keystrokes, debounce "
                "off)\n",
                timedTab ? "view" : "heatmap", qPrintable(what), reps);
    std::printf("compute: the worker (embed + attention); views: the rest until every view holds the snapshot\n"
                "(keystroke handling, hand-over, data into the plots); paint: queued replot + paint of the view.\n");
    std::printf("%8s %12s %12s %12s %12s %12s %12s\n", "tokens", "median ms", "min ms", "max ms", "compute ms",
                "views ms", "paint ms");
    for (int n : sizes) {
        QString sentence;
        for (int i = 0; i < n; ++i)
            sentence += QStringLiteral("w%1 ").arg((i * 37) % 4096);
        sentence += QStringLiteral("w1");
        // n+1 tokens with the word being typed; drop one so that n are computed
        sentence = sentence.section(QLatin1Char(' '), 1);
        w.sentenceEdit()->setPlainText(sentence);
        QElapsedTimer settle;
        settle.start();
        while ((!w.session()->snapshot() || w.session()->snapshot()->tq() != n || w.session()->busy())
               && settle.elapsed() < 120000)
            QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
        QCoreApplication::processEvents();
        if (timedTab)
            w.tabs()->setCurrentWidget(timedTab);
        QCoreApplication::processEvents();
        std::vector<double> times, compute, views, paint;
        EventProfile events;
        if (p.isSet(profileOpt))
            events.start();
        QTextCursor c = w.sentenceEdit()->textCursor();
        c.movePosition(QTextCursor::End);
        w.sentenceEdit()->setTextCursor(c);
        w.sentenceEdit()->setFocus();
        for (int r = 0; r < reps; ++r) {
            const bool add = r % 2 == 0;
            events.nextKeystroke();
            const double total = timer.type(add ? Qt::Key_X : Qt::Key_Backspace, add ? QStringLiteral("x") : QString());
            const double viewsAt = timer.viewsAtMs();
            times.push_back(total);
            compute.push_back(w.session()->snapshot()->computeMs);
            views.push_back(viewsAt - w.session()->snapshot()->totalMs);
            paint.push_back(total - viewsAt);
        }
        std::sort(times.begin(), times.end());
        for (auto *v : {&compute, &views, &paint})
            std::sort(v->begin(), v->end());
        const size_t m = times.size() / 2;
        std::printf("%8d %12.2f %12.2f %12.2f %12.2f %12.2f %12.2f\n", n, times[m], times.front(), times.back(),
                    compute[m], views[m], paint[m]);
        if (p.isSet(profileOpt)) {
            events.stop();
            events.print();
            printReplotTimes(w);
        }
        std::fflush(stdout);
    }
    std::printf("device: %s\n", cpuDeviceName().c_str());
    return 0;
}

namespace {

// Keystroke -> repainted heatmap with a model: the median of `reps` key presses, each a new letter,
// at the end of the text (a causal model recomputes only the last token) and at its start (every
// token recomputed).
// What the views of attnviz/reads.h add to a keystroke in the window (a causal model, the text
// typed; the cursor at its end): a letter appended with the norm-weighted switch on; with the Lens
// tab shown, until its selected column is painted (the column runs on a pool thread after the
// snapshot); the lens grid in the background; and generated tokens, each appended to the text and
// every shown view repainted.
void benchReadsInWindow(ui::MainWindow &w, KeystrokeTimer &timer, int reps)
{
    const auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v.empty() ? 0.0 : v[v.size() / 2];
    };
    const auto waitFor = [](const std::function<bool()> &done) {
        QElapsedTimer guard;
        guard.start();
        QTimer beat; // wakes the wait below at least every millisecond
        beat.start(1);
        while (!done() && guard.elapsed() < 120000)
            QCoreApplication::processEvents(QEventLoop::AllEvents | QEventLoop::WaitForMoreEvents);
    };
    const auto letter = [](int r) { return std::pair(Qt::Key_A + r % 26, QString(QChar(QLatin1Char(char('a' + r % 26))))); };
    QTextCursor c = w.sentenceEdit()->textCursor();
    c.movePosition(QTextCursor::End);
    w.sentenceEdit()->setTextCursor(c);
    w.session()->setSelectedQuery(-1);

    // the switch redraws the views at once: that repaint is let finish before the next key is timed
    const auto settle = [&waitFor] {
        QElapsedTimer t;
        t.start();
        waitFor([&] { return t.elapsed() >= 100; });
    };
    std::vector<double> plain, weighted;
    for (int r = 0; r < reps; ++r) { // interleaved: off, on
        const auto [key, text] = letter(r);
        w.views()->setNormWeighted(false);
        settle();
        plain.push_back(timer.type(key, text));
        w.views()->setNormWeighted(true);
        settle();
        weighted.push_back(timer.type(key, text));
    }
    w.views()->setNormWeighted(false);
    std::printf("  norm-weighted switch on: a letter appended %.2f ms (off, interleaved: %.2f ms)\n", median(weighted),
                median(plain));

    auto *lens = qobject_cast<ui::LogitLensView *>(w.views()->view(QStringLiteral("lens")));
    if (lens && w.showView(QStringLiteral("lens"))) {
        waitFor([&] { return lens->complete(); });
        timer.setPlot(lens->plot());
        std::vector<double> total, column, grid;
        for (int r = 0; r < reps; ++r) {
            const auto [key, text] = letter(r);
            QElapsedTimer t;
            t.start();
            timer.type(key, text);
            waitFor([&] { return lens->selectedReady(); });
            total.push_back(double(t.nsecsElapsed()) / 1e6);
            column.push_back(lens->columnMs());
            waitFor([&] { return lens->complete(); });
            grid.push_back(lens->gridMs());
        }
        std::printf("  lens tab: a letter appended -> its selected column painted %.2f ms (the column %.2f ms on a pool "
                    "thread); the whole grid %.1f ms in the background\n",
                    median(total), median(column), median(grid));
        timer.setPlot(w.heatmapView()->plot());
        w.showView(QStringLiteral("weights"));
    }

    ui::GenerationPanel *gen = w.generationPanel();
    const int tokens = 16;
    gen->setSampling(0.0, 50, 1.0, 0);
    gen->setTokens(tokens);
    gen->setPace(0.0); // the tokens' time, not the pause the window leaves after each to watch it
    QElapsedTimer t;
    t.start();
    gen->start();
    waitFor([&] { return !gen->running(); });
    const double ms = double(t.nsecsElapsed()) / 1e6;
    std::printf("  generation (greedy, Weights tab): %d tokens in %.1f ms, %.2f ms per token with every shown view "
                "repainted (%s)\n",
                gen->generatedCount(), ms, gen->generatedCount() > 0 ? ms / gen->generatedCount() : 0.0,
                qPrintable(gen->status()));
}

int benchUiModel(const QCommandLineParser &p, const QCommandLineOption &modelOpt, const QCommandLineOption &seededOpt,
                 const QCommandLineOption &tokenizerOpt, const QCommandLineOption &tokensOpt, int reps, bool profile)
{
    std::shared_ptr<Model> model;
    QString source, error;
    if (p.isSet(seededOpt)) {
        const QString shape = p.value(seededOpt);
        Architecture arch;
        std::string dtype;
        if (!seededShape(shape.toStdString(), arch, &dtype))
            return fail("bench", QStringLiteral("--seeded: %1, not %2").arg(cli::seededShapeList(), shape), 2);
        std::shared_ptr<Model> tokenizer;
        if (!openModel(p.value(tokenizerOpt), tokenizer, &error))
            return fail("bench", QStringLiteral("--tokenizer: %1").arg(error), 2);
        std::unique_ptr<Model> seeded;
        if (Status st = seededPretrained(arch, 1, seeded, dtype); !st)
            return fail("bench", QString::fromStdString(st.message), 1);
        if (tokenizer->info().vocabulary > seeded->info().vocabulary)
            return fail("bench", QStringLiteral("--tokenizer: its %1 tokens do not fit the %2 of %3")
                                     .arg(tokenizer->info().vocabulary).arg(seeded->info().vocabulary).arg(shape), 2);
        source = QStringLiteral("seeded %1").arg(shape);
        model = std::make_shared<TokenizedBy>(tokenizer, std::move(seeded), source.toStdString());
    } else {
        source = p.value(modelOpt);
        if (!openModel(source, model, &error))
            return fail("bench", error, 2);
    }
    const ModelInfo info = model->info();
    std::vector<int> sizes;
    for (const QString &s : p.value(tokensOpt).split(QLatin1Char(','), Qt::SkipEmptyParts))
        sizes.push_back(std::clamp(s.toInt(), 2, std::max(2, info.maxPositions > 0 ? info.maxPositions : 1 << 20)));

    ui::MainWindow w;
    w.resize(1600, 1000);
    w.show();
    w.session()->setDebounceMs(0);
    w.setModel(source, model);
    KeystrokeTimer timer(w, w.heatmapView()->plot());
    std::printf("keystroke -> repainted heatmap with %s (%d layers x %d heads, d_model %d, %s; median of %d keystrokes, "
                "debounce off)\n",
                info.name.c_str(), info.layers, info.heads, info.dModel, info.causal ? "causal" : "bidirectional", reps);
    std::printf("append: a letter typed at the end of the text (a causal model recomputes the last token); full: at its\n"
                "start (every token recomputed). ms = key press to the heatmap painted; comp = the worker's trace;\n"
                "views = the rest until every view holds the snapshot (key handling, hand-over, data into the views);\n"
                "gui = ms - comp (views + replot + paint: the window's share).\n");
    std::printf("%8s %12s %12s %12s %12s %12s %12s %12s %12s\n", "tokens", "append ms", "append comp", "append views",
                "append gui", "full ms", "full comp", "full views", "full gui");
    static const char *words[] = {"the", "cat", "sat", "on", "a", "mat", "and", "looked", "at", "small", "bird", "in",
                                  "tree", "near", "house", "while", "rain", "fell", "over", "quiet", "town"};
    for (int n : sizes) {
        // n tokens of plain words (the tokenizer decides how many words that takes)
        std::string text;
        std::vector<TraceToken> toks;
        for (int i = 0; int(toks.size()) < n && i < 100000; ++i) {
            const std::string next = text + (text.empty() ? "" : " ") + words[(i * 7) % 21];
            if (Status st = model->tokenize(next, toks); !st)
                return fail("bench", QString::fromStdString(st.message), 1);
            if (int(toks.size()) > n)
                break;
            text = next;
        }
        model->tokenize(text, toks);
        const QString sentence = QString::fromStdString(text);
        w.sentenceEdit()->setPlainText(sentence);
        QElapsedTimer settle;
        settle.start();
        while ((!w.session()->snapshot() || w.session()->snapshot()->sentence != sentence || w.session()->busy())
               && settle.elapsed() < 120000)
            QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
        QCoreApplication::processEvents();
        w.sentenceEdit()->setFocus();
        double median[2][4] = {};
        EventProfile profiles[2];
        for (int where = 0; where < 2; ++where) { // 0: at the end, 1: at the start
            QTextCursor c = w.sentenceEdit()->textCursor();
            c.movePosition(where == 0 ? QTextCursor::End : QTextCursor::Start);
            w.sentenceEdit()->setTextCursor(c);
            std::vector<double> totals, computes, views;
            EventProfile &events = profiles[where];
            if (profile)
                events.start();
            for (int r = 0; r < reps; ++r) {
                // a new letter every time: a text the window has not computed before (typing a letter
                // and taking it back would find the trace of two keystrokes ago, a double-buffer hit)
                if (where == 1) {
                    QTextCursor s = w.sentenceEdit()->textCursor();
                    s.movePosition(QTextCursor::Start);
                    w.sentenceEdit()->setTextCursor(s);
                }
                events.nextKeystroke();
                totals.push_back(timer.type(Qt::Key_A + r % 26, QString(QChar(QLatin1Char(char('a' + r % 26))))));
                computes.push_back(w.session()->snapshot()->computeMs);
                views.push_back(timer.viewsAtMs() - w.session()->snapshot()->totalMs);
            }
            if (profile)
                events.stop();
            for (auto *v : {&totals, &computes, &views})
                std::sort(v->begin(), v->end());
            median[where][0] = totals[totals.size() / 2];
            median[where][1] = computes[computes.size() / 2];
            median[where][2] = views[views.size() / 2];
            median[where][3] = totals[totals.size() / 2] - computes[computes.size() / 2];
        }
        std::printf("%8d %12.2f %12.2f %12.2f %12.2f %12.2f %12.2f %12.2f %12.2f\n", int(toks.size()), median[0][0],
                    median[0][1], median[0][2], median[0][3], median[1][0], median[1][1], median[1][2], median[1][3]);
        if (profile) {
            for (int where = 0; where < 2; ++where) {
                std::printf("%s, %d tokens:\n", where == 0 ? "append" : "full", int(toks.size()));
                profiles[where].print();
            }
            printReplotTimes(w);
        }
        // Edit ▸ Ablate the selected head (Ctrl+K), pressed again to restore it, each ablation on a
        // head selected just before: pressed at once (the speculation on the head, begun when it was
        // selected, has done nothing yet: the press computes), 100 ms later (a hand's way from the grid
        // to the keys; the window's event loop runs meanwhile: the press shows the speculation, or
        // waits for it when half done), or after the window idled until the speculation was done. The
        // restore shows again the clean result the window had. A first ablation, untimed, comes before:
        // a window speculates only once a head has been ablated in it (window/headablations.h). A
        // speculation's CPU is the process's (getrusage) from the head's selection to its end (the
        // views' update for the head selected included). Last, the hand on the mouse: the pointer rests
        // 150 ms on the head's thumbnail in the Layers × heads grid (its ablation speculated on after
        // HeadAblations::kDwellMs), clicks it (selected, the Weights tab shown) and the press follows
        // at once; or the head's menu stays open 300 ms before its Ablate entry is chosen.
        if (QAction *ablate = w.findChild<QAction *>(QStringLiteral("ablateSelectedZeroAction")); ablate && ablate->isEnabled()) {
            w.session()->setSelectedLayer(std::max(0, info.layers / 2));
            QCoreApplication::processEvents();
            ui::Speculation *spec = w.session()->speculation();
            auto mid = [](std::vector<double> v) {
                std::sort(v.begin(), v.end());
                return v.empty() ? 0.0 : v[v.size() / 2];
            };
            const auto settle = [&] {
                QElapsedTimer settle;
                settle.start();
                while (w.session()->busy() && settle.elapsed() < 120000)
                    QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
            };
            const auto restore = [&] {
                if (!w.session()->edits().empty())
                    ablate->trigger();
                settle();
            };
            const auto cpuMs = [] {
                rusage u{};
                getrusage(RUSAGE_SELF, &u);
                return 1e3 * double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
                       1e-3 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
            };
            restore();
            w.session()->setSelectedHead(std::max(1, info.heads) - 1);
            ablate->trigger(); // the window's first ablation (computed by the press: nothing speculated yet)
            settle();
            restore();
            const char *whens[] = {"right after selecting the head", "100 ms after selecting the head",
                                   "after the window idled (speculated)",
                                   "after resting 150 ms on the head in the grid, then clicking it",
                                   "from the head's menu in the grid, open 300 ms"};
            const int midLayer = std::max(0, info.layers / 2);
            for (int when = 0; when < 5; ++when) {
                std::vector<double> toggles, on, off, cpu;
                int swapped = 0, joined = 0;
                for (int r = 0; r < reps; ++r) {
                    const bool ablating = w.session()->edits().empty();
                    // each ablation on a head not ablated before in this row (the one before would be
                    // shown again: the restore's result kept)
                    const int head = (r / 2) % std::max(1, info.heads);
                    // on the grid (again: the click before showed the weights), through its signals: the
                    // pointer resting 150 ms on the head, then a click (selected, the Weights tab shown);
                    // or the head's menu open 300 ms (its ablation speculated on at once, on the core's
                    // pool), then its Ablate entry: the selected head's press
                    if (ablating && (when == 3 || when == 4)) {
                        const bool menu = when == 4;
                        w.showView(QStringLiteral("headRoles"));
                        settle();
                        emit w.headRolesView()->headPointed(midLayer, head, menu);
                        QEventLoop held;
                        QTimer::singleShot(menu ? 300 : 150, &held, &QEventLoop::quit);
                        held.exec();
                        if (menu) {
                            w.session()->setSelectedLayer(midLayer);
                            w.session()->setSelectedHead(head);
                        } else {
                            emit w.headRolesView()->headOpened(midLayer, head);
                        }
                    } else if (ablating)
                        w.session()->setSelectedHead(head);
                    // waits blocked in the event loop, as the window idles (a loop of processEvents
                    // would keep the GUI thread spinning: CPU the idle-priority speculation never gets)
                    if (ablating && when == 1) {
                        QEventLoop gap;
                        QTimer::singleShot(100, &gap, &QEventLoop::quit);
                        gap.exec();
                    }
                    if (ablating && when == 2) { // the window left alone until the speculation is done
                        const double before = cpuMs();
                        if (spec->running()) {
                            QEventLoop done;
                            QObject::connect(spec, &ui::Speculation::finished, &done, &QEventLoop::quit);
                            QTimer::singleShot(120000, &done, &QEventLoop::quit);
                            done.exec();
                        }
                        if (!spec->ready())
                            break;
                        cpu.push_back(cpuMs() - before);
                    }
                    const bool ready = spec->ready();
                    bool waited = false;
                    toggles.push_back(timer.time([&] {
                        ablate->trigger();
                        waited = w.session()->awaitingSpeculation();
                    }));
                    (ablating ? on : off).push_back(toggles.back());
                    swapped += ablating && ready && !spec->ready() ? 1 : 0;
                    joined += waited ? 1 : 0;
                }
                std::printf("%8s ablation toggle %s (Edit > Ablate the selected head, layer %d, pressed again to "
                            "restore): %.2f ms median of %d presses (ablate %.2f ms, restore %.2f ms; of %d ablations "
                            "%d shown from the speculation finished, %d waited for it, half done or pointed at)\n",
                            "", whens[when], std::max(0, info.layers / 2), mid(toggles), int(toggles.size()), mid(on),
                            mid(off), int(on.size()), swapped, joined);
                if (!cpu.empty())
                    std::printf("%8s a speculation's CPU (the process's, the window idle): %.1f ms median of %d\n", "",
                                mid(cpu), int(cpu.size()));
                restore();
            }
            std::printf("%8s the keystrokes above: a letter appended %.2f ms, at the start %.2f ms\n", "", median[0][0],
                        median[1][0]);
            // the press from the grid's menu against a letter typed with the grid shown (its repaint in
            // both), interleaved with a letter on the Weights tab; each tab shown 100 ms before its key
            QTextCursor end = w.sentenceEdit()->textCursor();
            end.movePosition(QTextCursor::End);
            w.sentenceEdit()->setTextCursor(end);
            std::vector<double> onGrid, onWeights;
            for (int r = 0; r < reps; ++r) {
                for (const bool grid : {true, false}) {
                    w.showView(grid ? QStringLiteral("headRoles") : QStringLiteral("weights"));
                    settle();
                    QEventLoop shown;
                    QTimer::singleShot(100, &shown, &QEventLoop::quit);
                    shown.exec();
                    (grid ? onGrid : onWeights)
                        .push_back(timer.type(Qt::Key_A + r % 26, QString(QChar(QLatin1Char(char('a' + r % 26))))));
                }
            }
            std::printf("%8s a letter appended with the Layers x heads grid shown: %.2f ms (on the Weights tab, "
                        "interleaved: %.2f ms)\n",
                        "", mid(onGrid), mid(onWeights));
        }
        if (info.causal)
            benchReadsInWindow(w, timer, reps);
        std::fflush(stdout);
    }
    std::printf("device: %s (models compute on the CPU)\n", cpuDeviceName().c_str());
    return 0;
}

} // namespace

} // namespace attnviz::cli

