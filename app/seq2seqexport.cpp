// SPDX-License-Identifier: GPL-3.0-or-later
#include "seq2seqexport.h"
#include "figureoptions.h"
#include "output.h"

#include "views/alignmentview.h"
#include "views/heatmapview.h"

#include <qcustomplot.h>

#include <QFileInfo>
#include <QJsonArray>

#include <memory>

namespace attnviz::cli {

bool isSeq2SeqView(const QString &id) { return id == QLatin1String("cross") || id == QLatin1String("alignment"); }

QString seq2seqViewRefusal(const QString &id, const ui::ComputeSnapshot &snapshot)
{
    if (snapshot.encoderDecoder)
        return {};
    const QString what = id == QLatin1String("cross") ? QStringLiteral("draws an encoder-decoder model's cross-attention")
                                                      : QStringLiteral("aligns an encoder-decoder model's words");
    const QString model = snapshot.fromModel() ? QStringLiteral("; %1 is %2").arg(QString::fromStdString(snapshot.modelInfo.name),
                                                                                  QString::fromStdString(snapshot.modelInfo.family))
                                               : QStringLiteral("; the word vectors have none");
    return QStringLiteral("--view %1 %2: give --model DIR of one (t5, bart, mbart, marian)%3").arg(id, what, model);
}

int exportSeq2SeqView(const QString &id, const ui::SnapshotPtr &snapshot, int layer, int head, bool numbers,
                      const QString &out, const ui::FigureOptions &figure)
{
    if (!snapshot->hasResult())
        return fail("export", snapshot->message.isEmpty() ? QStringLiteral("--sentence: no source to read") : snapshot->message, 2);
    const QString suffix = QFileInfo(out).suffix().toLower();
    const QSize logical = figureWidgetSize(figure, suffix);
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
