// SPDX-License-Identifier: GPL-3.0-or-later
#include "readexport.h"
#include "figureoptions.h"
#include "output.h"

#include "views/dlaview.h"
#include "views/logitlensview.h"
#include "views/viewregistry.h"

#include <qcustomplot.h>

#include <QFileInfo>
#include <QJsonArray>

#include <memory>

namespace attnviz::cli {

bool isReadsView(const QString &id) { return id == QLatin1String("lens") || id == QLatin1String("dla"); }

int exportReadsView(const QString &id, const ui::SnapshotPtr &snapshot, int position, const QString &token, const QString &out,
                    const ui::FigureOptions &figure)
{
    const ui::ComputeSnapshot &s = *snapshot;
    if (!s.hasResult())
        return fail("export", s.message, 2);
    const bool lens = id == QLatin1String("lens");
    if (!s.fromModel() || !s.model || !(lens ? s.causalLm() || s.maskedLm() : s.causalLm()))
        return fail("export", lens ? QStringLiteral("--view lens reads a language model's head: give --model DIR of one (GPT-2, Llama, BERT …)")
                                   : QStringLiteral("--view dla attributes a causal language model's logit: give --model DIR of one (GPT-2, Llama, Qwen …)"),
                    2);
    if (position >= s.tq())
        return fail("export", QStringLiteral("--query %1: the text has %2 tokens").arg(position).arg(s.tq()), 2);
    std::unique_ptr<ui::View> widget(ui::findViewSpec(id)->make(ui::ViewContext(), nullptr));
    ui::LabelledMatrix m;
    m.view = id;
    if (auto *v = qobject_cast<ui::LogitLensView *>(widget.get())) {
        v->setSelection(0, 0, position);
        v->setSnapshot(snapshot);
        v->completeNow();
        m.values = v->topProbabilities();
        // an encoder-decoder model's decoder: a row per stage ("L0 self", "L0 cross", "L0 MLP", …)
        const bool stages = !v->rowNames().isEmpty();
        m.corner = stages ? QStringLiteral("decoder stage\\position") : QStringLiteral("after layer\\position");
        for (int l = 0; l < v->layerCount(); ++l)
            m.rows << (stages ? v->rowNames()[l] : QString::number(l));
        m.columns = v->positionLabels();
        QJsonArray tokens, actual;
        for (int l = 0; l < v->layerCount(); ++l) {
            QJsonArray t, a;
            for (int i = 0; i < v->positionCount(); ++i) {
                const LensCell &c = v->grid().at(l, i);
                t.append(c.computed() ? QString::fromStdString(c.top.front().token) : QString());
                a.append(ui::jsonNumber(c.actualP));
            }
            tokens.append(t);
            actual.append(a);
        }
        m.title = stages ? QStringLiteral("Logit lens of the decoder: p(top token) per stage and position")
                         : QStringLiteral("Logit lens: p(top token) per layer and position");
        m.extra = QJsonObject{{QStringLiteral("top_tokens"), tokens}, {QStringLiteral("actual_p"), actual}};
    } else if (auto *v = qobject_cast<ui::DlaView *>(widget.get())) {
        v->setSnapshot(snapshot);
        v->setSelection(0, -1, position);
        if (!token.isEmpty()) {
            v->setTypedToken(token);
            v->setTarget(ui::DlaView::Target::Typed);
        }
        if (!v->hasAttribution())
            return fail("export", QStringLiteral("--view dla: ") + v->message(), 2);
        const Attribution &a = v->attribution();
        m.values = v->matrix();
        // the corner says what was attributed where: the CSV holds no other header
        m.corner = QStringLiteral("layer\\head: logit of %1 (id %2) after position %3")
                       .arg(QString::fromStdString(a.targetToken))
                       .arg(a.target)
                       .arg(a.position);
        for (int l = 0; l < a.layers; ++l)
            m.rows << QString::number(l);
        // an encoder-decoder model's decoder: its self-attention heads, then its cross-attention heads
        const Seq2SeqAttribution &sa = v->seq2seqAttribution();
        for (int h = 0; h < a.heads; ++h)
            m.columns << (v->seq2seq() ? QStringLiteral("%1 %2").arg(h < sa.heads ? QStringLiteral("self") : QStringLiteral("cross")).arg(h % sa.heads)
                                       : QString::number(h));
        m.columns << QStringLiteral("MLP");
        m.title = QStringLiteral("Direct logit attribution of %1 at position %2").arg(QString::fromStdString(a.targetToken)).arg(a.position);
        QJsonArray attnBias;
        for (double b : a.attnBias)
            attnBias.append(b);
        m.extra = QJsonObject{{QStringLiteral("position"), a.position},
                              {QStringLiteral("target"), a.target},
                              {QStringLiteral("target_token"), QString::fromStdString(a.targetToken)},
                              {QStringLiteral("logit"), a.logit},
                              {QStringLiteral("capped_logit"), a.cappedLogit},
                              {QStringLiteral("input"), a.input},
                              {QStringLiteral("attention_bias"), attnBias},
                              {QStringLiteral("norm_bias"), a.normBias},
                              {QStringLiteral("output_bias"), a.outputBias}};
        if (v->seq2seq()) { // attention_bias above is each layer's self + cross output bias
            QJsonArray selfBias, crossBias;
            for (int l = 0; l < sa.layers; ++l) {
                selfBias.append(sa.selfBias[size_t(l)]);
                crossBias.append(sa.crossBias[size_t(l)]);
            }
            m.extra.insert(QStringLiteral("self_attention_bias"), selfBias);
            m.extra.insert(QStringLiteral("cross_attention_bias"), crossBias);
            m.extra.insert(QStringLiteral("logits_bias"), sa.logitsBias);
            m.extra.insert(QStringLiteral("heads_per_attention"), sa.heads);
        }
    }
    QString error;
    if (ui::isMatrixSuffix(QFileInfo(out).suffix().toLower())) {
        if (!ui::saveLabelledMatrix(m, out, &error))
            return fail("export", error, 1);
        return 0;
    }
    widget->resize(figureWidgetSize(figure, QFileInfo(out).suffix().toLower()));
    widget->ensurePolished();
    QCustomPlot *plot = widget->plot();
    plot->replot(QCustomPlot::rpImmediateRefresh);
    if (!ui::saveFigure(plot, out, figure, &error))
        return fail("export", error, 1);
    return 0;
}

} // namespace attnviz::cli
