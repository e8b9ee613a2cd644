// SPDX-License-Identifier: GPL-3.0-or-later
#include "seq2seqexport.h"
#include "figureoptions.h"
#include "output.h"

#include "views/alignmentview.h"
#include "views/heatmapview.h"
#include "views/pipelineview.h"

#include <qcustomplot.h>

#include <QFileInfo>
#include <QJsonArray>
#include <QRegularExpression>

#include <memory>

namespace attnviz::cli {

bool isSeq2SeqView(const QString &id)
{
    return id == QLatin1String("cross") || id == QLatin1String("alignment") || id == QLatin1String("pipeline");
}

QString seq2seqViewRefusal(const QString &id, const ui::ComputeSnapshot &snapshot)
{
    if (snapshot.encoderDecoder)
        return {};
    const QString what = id == QLatin1String("cross")      ? QStringLiteral("draws an encoder-decoder model's cross-attention")
                         : id == QLatin1String("pipeline") ? QStringLiteral("draws a stage of an encoder-decoder model's pipeline "
                                                                            "(of other models: not yet, File ▸ Export in the window)")
                                                           : QStringLiteral("aligns an encoder-decoder model's words");
    const QString model = snapshot.fromModel() ? QStringLiteral("; %1 is %2").arg(QString::fromStdString(snapshot.modelInfo.name),
                                                                                  QString::fromStdString(snapshot.modelInfo.family))
                                               : QStringLiteral("; the word vectors have none");
    return QStringLiteral("--view %1 %2: give --model DIR of one (t5, bart, mbart, marian)%3").arg(id, what, model);
}

namespace {

// One stage of the Pipeline of the attention chosen, as the window's File ▸ Export writes it (its
// figure titled with its configuration line) or its numbers, every row and column.
int exportPipelineStage(const ui::SnapshotPtr &snapshot, int layer, int head, const QString &out, ui::FigureOptions figure,
                        const PipelineChoice &choice)
{
    const ui::SnapshotPtr shown = ui::seq2seqView(snapshot, choice.kind);
    const QString kind = ui::attentionKindName(choice.kind).toLower();
    const int layers = shown->numLayers();
    if (layer >= layers)
        return fail("export", QStringLiteral("--layer %1: the %2 attention has layers 0..%3").arg(layer).arg(kind).arg(layers - 1), 2);
    ui::PipelineView view;
    view.setSnapshot(shown);
    view.setSelection(std::max(0, layer), head, -1);
    // a stage by number, by name ("q of head 2" as "q"), or by the end of one name alone ("weights")
    QStringList names;
    int stage = -1, endsWith = -1, endings = 0;
    const QString wanted = (choice.stage.isEmpty() ? QStringLiteral("attention weights") : choice.stage)
                               .trimmed()
                               .toLower()
                               .replace(QLatin1Char('-'), QLatin1Char(' '));
    bool number = false;
    const int n = wanted.toInt(&number);
    static const QRegularExpression ofHead(QStringLiteral(" of head \\d+$"));
    for (int i = 0; i < view.stageCount(); ++i) {
        const QString name = view.stageName(i).toLower().remove(ofHead);
        names << QStringLiteral("%1 %2").arg(i + 1).arg(name);
        if ((number && n == i + 1) || (!number && name == wanted))
            stage = i;
        else if (!number && name.endsWith(QLatin1Char(' ') + wanted) && ++endings)
            endsWith = i;
    }
    if (stage < 0 && endings == 1)
        stage = endsWith;
    if (stage < 0)
        return fail("export", QStringLiteral("--stage %1: the %2 attention's pipeline has %3")
                                  .arg(choice.stage.isEmpty() ? QStringLiteral("weights") : choice.stage, kind, names.join(QStringLiteral(", "))),
                    2);
    if (!view.stageMatrix(stage))
        return fail("export", QStringLiteral("--stage %1 (%2): %3").arg(stage + 1).arg(view.stageName(stage), view.stageMessage(stage)), 2);
    const QString suffix = QFileInfo(out).suffix().toLower();
    QString error;
    if (ui::isMatrixSuffix(suffix)) {
        ui::LabelledMatrix m;
        m.view = QStringLiteral("pipeline");
        m.title = view.stageFigureTitle(stage);
        m.corner = QStringLiteral("row\\column");
        m.rows = view.stageRowLabels(stage);
        m.columns = view.stageColumnLabels(stage);
        m.values = view.stageMatrix(stage)->cast<double>();
        m.extra = QJsonObject{{QStringLiteral("attention"), kind},
                              {QStringLiteral("stage"), view.stageName(stage)},
                              {QStringLiteral("stage_number"), stage + 1},
                              {QStringLiteral("layer"), std::max(0, layer)},
                              {QStringLiteral("head"), view.shownHead()},
                              {QStringLiteral("formula"), view.stageTitle(stage)}};
        if (!ui::saveLabelledMatrix(m, out, &error))
            return fail("export", error, 1);
        return 0;
    }
    figure.titleLine = view.stageFigureTitle(stage);
    QCustomPlot *plot = view.stagePlot(stage);
    plot->replot(QCustomPlot::rpImmediateRefresh);
    if (!ui::saveFigure(plot, out, figure, &error))
        return fail("export", error, 1);
    return 0;
}

} // namespace

int exportSeq2SeqView(const QString &id, const ui::SnapshotPtr &snapshot, int layer, int head, bool numbers,
                      const QString &out, const ui::FigureOptions &figure, const PipelineChoice &pipeline)
{
    if (!snapshot->hasResult())
        return fail("export", snapshot->message.isEmpty() ? QStringLiteral("--sentence: no source to read") : snapshot->message, 2);
    const QString suffix = QFileInfo(out).suffix().toLower();
    const QSize logical = figureWidgetSize(figure, suffix);
    if (id == QLatin1String("pipeline"))
        return exportPipelineStage(snapshot, layer, head, out, figure, pipeline);
    const int layers = int(snapshot->trace->seq2seq.cross.size());
    if (layer >= layers)
        return fail("export", QStringLiteral("--layer %1: the cross-attention has layers 0..%2").arg(layer).arg(layers - 1), 2);
    QString error;
    if (id == QLatin1String("cross")) {
        const ui::SnapshotPtr cross = ui::seq2seqView(snapshot, AttentionKind::Cross);
        const int l = std::max(0, layer);
        if (ui::isMatrixSuffix(suffix)) {
            if (!ui::saveMatrices(*cross, ui::ExportView::Weights, l, head, 0, out, &error))
                return fail("export", error, 1);
            return 0;
        }
        ui::HeatmapView view;
        view.setShowNumbers(numbers);
        view.setHeadDisplay(head < 0 ? ui::HeadDisplay::Average : ui::HeadDisplay::One);
        view.setSnapshot(cross);
        view.setSelection(l, head, -1);
        view.resize(logical);
        view.ensurePolished();
        QCustomPlot *plot = view.plot();
        plot->resize(logical); // the view is never shown: its layout does not size the plot, and the title fits the plot's width
        plot->replot(QCustomPlot::rpImmediateRefresh);
        if (!ui::saveFigure(plot, out, figure, &error))
            return fail("export", error, 1);
        return 0;
    }
    ui::AlignmentView view;
    ui::AlignmentSettings settings;
    settings.layer = layer;
    settings.head = head;
    view.setSettings(settings);
    view.setSnapshot(snapshot);
    if (!view.plot())
        return fail("export", QStringLiteral("--view alignment: ") + view.message(), 2);
    if (ui::isMatrixSuffix(suffix)) {
        ui::LabelledMatrix m;
        m.view = id;
        m.title = QStringLiteral("Cross-attention by word, %1").arg(view.selectionText());
        m.corner = QStringLiteral("target\\source");
        m.rows = view.rowLabels();
        m.columns = view.columnLabels();
        m.values = view.wordMatrix();
        QJsonArray argmax;
        for (int a : view.argmax())
            argmax.append(a);
        m.extra = QJsonObject{{QStringLiteral("layer"), layer < 0 ? QJsonValue(QStringLiteral("mean")) : QJsonValue(layer)},
                              {QStringLiteral("head"), head < 0 ? QJsonValue(QStringLiteral("mean")) : QJsonValue(head)},
                              {QStringLiteral("argmax"), argmax}};
        if (!ui::saveLabelledMatrix(m, out, &error))
            return fail("export", error, 1);
        return 0;
    }
    view.resize(logical);
    view.ensurePolished();
    QCustomPlot *plot = view.plot();
    plot->resize(logical); // as above
    plot->replot(QCustomPlot::rpImmediateRefresh);
    if (!ui::saveFigure(plot, out, figure, &error))
        return fail("export", error, 1);
    return 0;
}

} // namespace attnviz::cli
