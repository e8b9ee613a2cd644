// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/dlaview.h"

#include "live/longtext.h"
#include "style/legibility.h"
#include "style/plotstyle.h"
#include "views/plotfit.h"
#include "views/readsplot.h"

#include "attnviz/seq2seqreads.h"

#include <qcustomplot.h>

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QVBoxLayout>

#include <cmath>

namespace attnviz::ui {

namespace {

QCPAxisRect *gridRect(QCustomPlot *plot)
{
    auto *r = new QCPAxisRect(plot, true);
    for (QCPAxis *a : r->axes())
        a->grid()->setVisible(false);
    for (QCPAxis *a : {r->axis(QCPAxis::atLeft), r->axis(QCPAxis::atBottom)}) {
        a->setTicker(wholeNumberTicker());
        a->setSubTicks(false);
    }
    r->axis(QCPAxis::atLeft)->setRangeReversed(true); // layer 0 at the top
    return r;
}

QString signedNumber(double v) { return QStringLiteral("%1%2").arg(v >= 0 ? QStringLiteral("+") : QString()).arg(v, 0, 'f', 3); }

// An encoder-decoder model's attribution as the grid draws it: per layer its self-attention heads,
// then its cross-attention heads (2 x heads columns), the MLP column; the biases summed.
Attribution asGrid(const Seq2SeqAttribution &a)
{
    Attribution g;
    g.position = a.position;
    g.target = a.target;
    g.targetToken = a.targetToken;
    g.layers = a.layers;
    g.heads = 2 * a.heads;
    g.logit = g.cappedLogit = a.logit;
    g.input = a.input;
    for (int l = 0; l < a.layers; ++l) {
        for (const std::vector<double> *v : {&a.selfHead, &a.crossHead})
            g.head.insert(g.head.end(), v->begin() + l * a.heads, v->begin() + (l + 1) * a.heads);
        g.attnBias.push_back(a.selfBias[size_t(l)] + a.crossBias[size_t(l)]);
    }
    g.mlp = a.mlp;
    g.normBias = a.normBias;
    g.outputBias = a.logitsBias;
    return g;
}

// The target's id for a seq2seq model: the one token the typed text is (specials dropped).
Status typedId(const Model &model, const std::string &text, int &id)
{
    std::vector<TraceToken> tokens;
    if (Status st = model.tokenize(text, tokens); !st)
        return st;
    std::vector<int> ids;
    for (const TraceToken &t : tokens)
        if (!t.special)
            ids.push_back(t.id);
    if (ids.size() != 1)
        return Status::error(StatusCode::InvalidInput, "“" + text + "” is " + std::to_string(ids.size()) +
                                                           " tokens of this model's vocabulary: type one");
    id = ids.front();
    return {};
}

} // namespace

DlaView::DlaView(QWidget *parent) : DeferredView(parent), m_plot(new QCustomPlot(this))
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto *bar = new QHBoxLayout;
    bar->setContentsMargins(6, 4, 6, 0);
    bar->addWidget(new QLabel(QStringLiteral("Target token:"), this));
    m_targetBox = new QComboBox(this);
    m_targetBox->setObjectName(QStringLiteral("dlaTarget"));
    m_targetBox->addItems({QStringLiteral("the predicted token"), QStringLiteral("the actual next token"),
                           QStringLiteral("a token I type")});
    bar->addWidget(m_targetBox);
    m_typedEdit = new QLineEdit(this);
    m_typedEdit->setObjectName(QStringLiteral("dlaTyped"));
    m_typedEdit->setPlaceholderText(QStringLiteral("e.g. “ Paris” or a vocabulary spelling"));
    m_typedEdit->setEnabled(false);
    bar->addWidget(m_typedEdit, 1);
    m_deltaBox = new QCheckBox(QStringLiteral("Δ vs clean"), this);
    m_deltaBox->setObjectName(QStringLiteral("dlaDelta"));
    m_deltaBox->setToolTip(
        QStringLiteral("Draw the edited model's parts minus the clean model's (the edits in the Edit menu)"));
    m_deltaBox->setVisible(false);
    bar->addWidget(m_deltaBox);
    layout->addLayout(bar);
    connect(m_deltaBox, &QCheckBox::toggled, this, &DlaView::setShowDelta);
    layout->addWidget(m_plot, 1);
    connect(m_targetBox, qOverload<int>(&QComboBox::currentIndexChanged), this, [this](int i) { setTarget(Target(i)); });
    connect(m_typedEdit, &QLineEdit::editingFinished, this, [this] { setTypedToken(m_typedEdit->text()); });

    m_plot->setObjectName(QStringLiteral("dlaPlot"));
    const TitledPlot titled = titledPlot(m_plot, this, QStringLiteral("Direct logit attribution"), &m_titleText, 0.3);
    m_title = titled.title;
    QCPLayoutGrid *row = titled.row;
    m_headRect = gridRect(m_plot);
    m_mlpRect = gridRect(m_plot);
    m_headRect->axis(QCPAxis::atBottom)->setLabel(QStringLiteral("head"));
    m_headRect->axis(QCPAxis::atLeft)->setLabel(QStringLiteral("layer"));
    m_mlpRect->axis(QCPAxis::atBottom)->setLabel(QStringLiteral("MLP"));
    m_mlpRect->axis(QCPAxis::atBottom)->setTickLabels(false);
    m_mlpRect->axis(QCPAxis::atLeft)->setTickLabels(false);
    m_scale = new QCPColorScale(m_plot);
    m_scale->setType(QCPAxis::atRight);
    m_scale->setBarWidth(10);
    m_scale->axis()->setLabel(QStringLiteral("adds to the logit"));
    m_scale->setGradient(divergingGradient());
    fitValueTicks(m_scale->axis());
    row->addElement(0, 0, m_headRect);
    row->addElement(0, 1, m_mlpRect);
    row->addElement(0, 2, m_scale);
    row->setColumnStretchFactors({1.0, 0.12, 0.04});
    auto *group = new QCPMarginGroup(m_plot);
    for (QCPLayoutElement *e : std::initializer_list<QCPLayoutElement *>{m_headRect, m_mlpRect, m_scale})
        e->setMarginGroup(QCP::msTop | QCP::msBottom, group);
    m_headMap = new QCPColorMap(m_headRect->axis(QCPAxis::atBottom), m_headRect->axis(QCPAxis::atLeft));
    m_mlpMap = new QCPColorMap(m_mlpRect->axis(QCPAxis::atBottom), m_mlpRect->axis(QCPAxis::atLeft));
    for (QCPColorMap *m : {m_headMap, m_mlpMap}) {
        m->setColorScale(m_scale);
        m->setInterpolate(false);
    }
    m_sel = new QCPItemRect(m_plot);
    m_sel->setClipAxisRect(m_headRect);
    for (QCPItemPosition *p : {m_sel->topLeft, m_sel->bottomRight})
        p->setAxes(m_headRect->axis(QCPAxis::atBottom), m_headRect->axis(QCPAxis::atLeft));
    m_sel->setPen(QPen(QColor(220, 30, 30), 2));
    m_sel->setBrush(Qt::NoBrush);
    m_split = new QCPItemLine(m_plot);
    m_split->setClipAxisRect(m_headRect);
    for (QCPItemPosition *p : {m_split->start, m_split->end})
        p->setAxes(m_headRect->axis(QCPAxis::atBottom), m_headRect->axis(QCPAxis::atLeft));
    m_split->setPen(QPen(QColor(40, 40, 40), 3));
    m_split->setVisible(false);

    cellInteraction(
        m_plot, this,
        [this](const QPointF &pos, int &layer, int &column) {
            QCPAxisRect *r = m_plot->axisRectAt(pos);
            if (!hasAttribution() || (r != m_headRect && r != m_mlpRect))
                return false;
            layer = int(std::lround(r->axis(QCPAxis::atLeft)->pixelToCoord(pos.y())));
            column = r == m_mlpRect ? m_attr.heads : int(std::lround(r->axis(QCPAxis::atBottom)->pixelToCoord(pos.x())));
            if (r == m_headRect && column >= m_attr.heads)
                return false;
            return layer >= 0 && layer < m_attr.layers && column >= 0 && column <= m_attr.heads;
        },
        [this](int layer, int column) { return cellText(layer, column); },
        [this](int layer, int column) {
            // an encoder-decoder model's cross-attention heads are opened under the Cross selector
            if (column < (m_seq2seq ? m_s2s.heads : m_attr.heads))
                emit headOpened(layer, column);
        });
    // after each layout (a replot's or an export's, at the figure's size): the labels and numbers
    // chosen for the cells' real sizes
    relabelAfterLayout(m_plot, this, [this] { return fitToCells(); });
    rebuild();
}

bool DlaView::fitToCells()
{
    if (!hasAttribution() || m_attr.heads <= 0 || m_attr.layers <= 0)
        return false;
    QCPAxis *x = m_headRect->axis(QCPAxis::atBottom), *y = m_headRect->axis(QCPAxis::atLeft);
    const double cellW = std::abs(x->coordToPixel(1) - x->coordToPixel(0));
    const double cellH = std::abs(y->coordToPixel(1) - y->coordToPixel(0));
    bool changed = false;
    // every head labelled where its number and a gap fit a column, else every 2nd, 5th, 10th …
    // (QCustomPlot's own choice aims at five ticks: heads 0, 2, 4, 6 of eight in any width)
    if (const auto ticker = qSharedPointerDynamicCast<QCPAxisTickerFixed>(x->ticker()); ticker && !m_seq2seq) {
        const QFontMetricsF fm(x->tickLabelFont());
        const double need = fm.horizontalAdvance(QString::number(m_attr.heads - 1)) + 0.5 * fm.height();
        double step = 1;
        for (int k = 0; step * cellW < need && step < m_attr.heads; ++k)
            step = (k % 3 == 1 ? 2.5 : 2) * step; // 1, 2, 5, 10, 20, 50 …
        if (ticker->tickStep() != step) {
            ticker->setTickStep(step);
            changed = true;
        }
    }
    // each cell's number in a font that fits the narrower of a head's and the MLP's cells, or none
    // (hover gives it)
    QString widest;
    for (const QCPItemText *t : m_numbers)
        if (t->text().size() > widest.size())
            widest = t->text();
    QCPAxis *mx = m_mlpRect->axis(QCPAxis::atBottom);
    const double mlpW = std::abs(mx->coordToPixel(0.5) - mx->coordToPixel(-0.5));
    const std::optional<QFont> f = cellNumberFont(m_plot, font(), QSizeF(std::min(cellW, mlpW), cellH), widest, 11);
    for (QCPItemText *t : m_numbers) {
        t->setVisible(bool(f));
        if (f)
            t->setFont(*f);
    }
    return changed;
}

QString DlaView::title() const { return m_title->text(); }

void DlaView::setSnapshot(SnapshotPtr snapshot)
{
    m_snapshot = std::move(snapshot);
    rebuild();
}

void DlaView::setSelection(int layer, int head, int query)
{
    const bool moved = query != m_query;
    m_layer = layer;
    m_head = head;
    m_query = query;
    if (moved)
        rebuild();
    else if (!deferred())
        draw();
}

void DlaView::setTarget(Target target)
{
    m_target = target;
    if (m_targetBox->currentIndex() != int(target))
        m_targetBox->setCurrentIndex(int(target));
    m_typedEdit->setEnabled(target == Target::Typed);
    rebuild();
}

void DlaView::setTypedToken(const QString &token)
{
    m_typed = token;
    if (m_typedEdit->text() != token)
        m_typedEdit->setText(token);
    if (m_target == Target::Typed)
        rebuild();
}

void DlaView::setShowDelta(bool delta)
{
    m_delta = delta;
    if (m_deltaBox->isChecked() != delta)
        m_deltaBox->setChecked(delta);
    if (!deferred())
        draw();
}

void DlaView::rebuild()
{
    if (deferred())
        return;
    compute();
    draw();
}

void DlaView::compute()
{
    m_attr = Attribution();
    m_clean = Attribution();
    m_s2s = Seq2SeqAttribution();
    m_seq2seq = false;
    m_message.clear();
    const ComputeSnapshot *s = m_snapshot.get();
    if (!s) {
        m_message = QStringLiteral("Computing…");
        return;
    }
    if (!s->hasResult()) {
        m_message = s->message;
        return;
    }
    if (!s->fromModel() || !s->model || !s->modelInfo.causal) {
        m_message = QStringLiteral("Direct logit attribution splits a causal language model's logit into what each head and MLP "
                                   "adds: open such a checkpoint (GPT-2, Llama, Qwen, Gemma …) under File › Open model.");
        return;
    }
    m_labels = s->queryLabels;
    if (s->encoderDecoder)
        return computeSeq2Seq();
    const Trace<float> &tr = *s->trace;
    const int t = int(tr.tokens.size());
    const int pos = m_query < 0 || m_query >= t ? t - 1 : m_query;
    int target = -1;
    switch (m_target) {
    case Target::Predicted: {
        NextTokens n;
        if (Status st = s->model->nextTokens(tr, pos, n); !st || n.top.empty()) {
            m_message = QString::fromStdString(st.message);
            return;
        }
        target = n.top.front().id;
        break;
    }
    case Target::ActualNext:
        if (pos + 1 >= t) {
            m_message = QStringLiteral("Nothing follows the last token: select an earlier position, or choose the predicted token.");
            return;
        }
        target = tr.tokens[size_t(pos) + 1].id;
        break;
    case Target::Typed:
        if (m_typed.isEmpty()) {
            m_message = QStringLiteral("Type a token above (“ Paris”, or a vocabulary spelling such as “ĠParis”).");
            return;
        }
        if (Status st = vocabularyId(*s->model, m_typed.toStdString(), target); !st) {
            m_message = QString::fromStdString(st.message);
            return;
        }
        break;
    }
    if (Status st = attribute(*s->model, tr, pos, target, m_attr); !st) {
        m_attr = Attribution();
        m_message = QString::fromStdString(st.message);
        return;
    }
    // the clean model's parts of the same logit, for the deltas (none where they cannot be had)
    if (tr.edited() && s->cleanTrace && s->cleanTrace->tokens.size() == tr.tokens.size())
        if (!attribute(*s->model, *s->cleanTrace, pos, target, m_clean))
            m_clean = Attribution();
}

void DlaView::computeSeq2Seq()
{
    const ComputeSnapshot *s = m_snapshot.get();
    const Trace<float> &tr = *s->trace;
    const int t = int(tr.tokens.size());
    const int pos = m_query < 0 || m_query >= t ? t - 1 : m_query;
    int target = -1;
    switch (m_target) {
    case Target::Predicted:
        if (size_t(pos) >= tr.predictions.next.size() || tr.predictions.next[size_t(pos)].empty()) {
            m_message = QStringLiteral("No prediction kept at position %1.").arg(pos);
            return;
        }
        target = tr.predictions.next[size_t(pos)].front().id;
        break;
    case Target::ActualNext:
        if (pos + 1 >= t) {
            m_message = QStringLiteral("Nothing follows the last target token: select an earlier position, or choose the predicted token.");
            return;
        }
        target = tr.tokens[size_t(pos) + 1].id;
        break;
    case Target::Typed:
        if (m_typed.isEmpty()) {
            m_message = QStringLiteral("Type a token above (text that is one token of the target's vocabulary).");
            return;
        }
        if (Status st = typedId(*s->model, m_typed.toStdString(), target); !st) {
            m_message = QString::fromStdString(st.message);
            return;
        }
        break;
    }
    if (Status st = seq2seqAttribute(*s->model, tr, pos, target, m_s2s); !st) {
        m_s2s = Seq2SeqAttribution();
        m_message = QString::fromStdString(st.message);
        return;
    }
    m_seq2seq = true;
    m_attr = asGrid(m_s2s);
}

void DlaView::draw()
{
    if (!hasAttribution()) {
        m_titleText = QStringLiteral("Direct logit attribution\n") + m_message;
        m_title->setText(fittedTitle(m_plot, m_title, m_titleText, 1.0));
        m_headMap->data()->clear();
        m_mlpMap->data()->clear();
        for (QCPItemText *t : m_numbers)
            m_plot->removeItem(t);
        m_numbers.clear();
        m_sel->setVisible(false);
        m_split->setVisible(false);
        m_plot->replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    const Attribution &a = m_attr;
    m_deltaBox->setVisible(hasClean());
    const bool delta = m_delta && hasClean();
    const Mat<double> m = delta ? deltaMatrix() : matrix();
    m_scale->axis()->setLabel(delta ? QStringLiteral("edited − clean") : QStringLiteral("adds to the logit"));
    auto *hd = new QCPColorMapData(a.heads, a.layers, QCPRange(0, std::max(0, a.heads - 1)), QCPRange(0, std::max(0, a.layers - 1)));
    // two cells across, the same value: a colour map of one column has no width to draw
    auto *md = new QCPColorMapData(2, a.layers, QCPRange(-0.25, 0.25), QCPRange(0, std::max(0, a.layers - 1)));
    for (int l = 0; l < a.layers; ++l) {
        for (int h = 0; h < a.heads; ++h)
            hd->setCell(h, l, m(l, h));
        md->setCell(0, l, m(l, a.heads));
        md->setCell(1, l, m(l, a.heads));
    }
    m_headMap->setData(hd, false);
    m_mlpMap->setData(md, false);
    const double hi = std::max(1e-9, m.cwiseAbs().maxCoeff());
    m_scale->setDataRange(QCPRange(-hi, hi));
    m_headRect->axis(QCPAxis::atBottom)->setRange(-0.5, a.heads - 0.5);
    if (m_seq2seq) { // self-attention's heads, then cross-attention's, a line between
        auto ticker = QSharedPointer<QCPAxisTickerText>::create();
        for (int h = 0; h < a.heads; ++h)
            ticker->addTick(h, QStringLiteral("%1 %2").arg(h < m_s2s.heads ? QStringLiteral("self") : QStringLiteral("cross")).arg(h % m_s2s.heads));
        m_headRect->axis(QCPAxis::atBottom)->setTicker(ticker);
        m_headRect->axis(QCPAxis::atBottom)->setTickLabelRotation(-45);
        m_headRect->axis(QCPAxis::atBottom)->setLabel(QStringLiteral("decoder head: self-attention | cross-attention"));
    } else {
        auto ticker = QSharedPointer<QCPAxisTickerFixed>::create(); // its step set after the layout (fitToCells)
        ticker->setTickStep(1);
        ticker->setScaleStrategy(QCPAxisTickerFixed::ssNone);
        m_headRect->axis(QCPAxis::atBottom)->setTicker(ticker);
        m_headRect->axis(QCPAxis::atBottom)->setTickLabelRotation(0);
        m_headRect->axis(QCPAxis::atBottom)->setLabel(QStringLiteral("head"));
    }
    m_split->setVisible(m_seq2seq);
    if (m_seq2seq) {
        m_split->start->setCoords(m_s2s.heads - 0.5, -0.5);
        m_split->end->setCoords(m_s2s.heads - 0.5, a.layers - 0.5);
    }
    m_mlpRect->axis(QCPAxis::atBottom)->setRange(-0.5, 0.5);
    for (QCPAxisRect *r : {m_headRect, m_mlpRect})
        r->axis(QCPAxis::atLeft)->setRange(-0.5, a.layers - 0.5);
    // each cell's number where the cells have room for it
    for (QCPItemText *t : m_numbers)
        m_plot->removeItem(t);
    m_numbers.clear();
    if (a.layers * (a.heads + 1) <= kMaxNumbers) {
        QFont f = font(); // fitted to the cells after the layout (fitToCells)
        f.setPixelSize(std::max(minimumNumberPixels(), 11));
        QCPColorGradient g = m_scale->gradient();
        for (int l = 0; l < a.layers; ++l)
            for (int c = 0; c <= a.heads; ++c) {
                QCPAxisRect *r = c == a.heads ? m_mlpRect : m_headRect;
                auto *t = new QCPItemText(m_plot);
                t->setClipAxisRect(r);
                t->position->setAxes(r->axis(QCPAxis::atBottom), r->axis(QCPAxis::atLeft));
                t->position->setCoords(c == a.heads ? 0 : c, l);
                t->setFont(f);
                t->setProperty("attnviz.ownColour", true); // black or white on its cell, not the theme's
                t->setText(QString::number(m(l, c), 'f', 2));
                t->setColor(textOn(QColor::fromRgb(g.color(m(l, c), QCPRange(-hi, hi)))));
                m_numbers.push_back(t);
            }
    }
    const bool showSel = m_head >= 0 && m_head < (m_seq2seq ? m_s2s.heads : a.heads) && m_layer >= 0 && m_layer < a.layers;
    m_sel->setVisible(showSel);
    if (showSel) {
        m_sel->topLeft->setCoords(m_head - 0.5, m_layer - 0.5);
        m_sel->bottomRight->setCoords(m_head + 0.5, m_layer + 0.5);
    }
    double heads = 0, mlps = 0, biases = a.normBias + a.outputBias;
    for (double v : a.head)
        heads += v;
    for (double v : a.mlp)
        mlps += v;
    for (double v : a.attnBias)
        biases += v;
    const QString token = m_seq2seq ? QString() : QString::fromStdString(tokenOf(*m_snapshot->model, a.target).display);
    QString t = QStringLiteral("Direct logit attribution — “%1” after “%2” (position %3)\nlogit %4 = input %5 %6 (heads) %7 (MLPs) %8 (biases). "
                               "Each part through the final norm (its scale frozen) and “%1”’s unembedding row.")
                    .arg(token, m_labels.value(a.position))
                    .arg(a.position + m_snapshot->windowFirst)
                    .arg(a.logit, 0, 'f', 3)
                    .arg(a.input, 0, 'f', 3)
                    .arg(signedNumber(heads), signedNumber(mlps), signedNumber(biases));
    if (m_seq2seq) {
        double self = 0, cross = 0;
        for (double v : m_s2s.selfHead)
            self += v;
        for (double v : m_s2s.crossHead)
            cross += v;
        t = QStringLiteral("Direct logit attribution of the decoder — “%1” after “%2” (position %3)\nlogit %4 = input %5 %6 "
                           "(self-attention heads) %7 (cross-attention heads) %8 (MLPs) %9 (biases). Each part through the "
                           "final norm (its scale frozen) and “%1”’s unembedding row.")
                .arg(QString::fromStdString(m_s2s.targetDisplay), m_labels.value(a.position))
                .arg(a.position)
                .arg(a.logit, 0, 'f', 3)
                .arg(a.input, 0, 'f', 3)
                .arg(signedNumber(self), signedNumber(cross), signedNumber(mlps), signedNumber(biases));
    }
    if (a.softcap > 0)
        t += QStringLiteral(" Soft-capped after: %1 · tanh(logit / %1) = %2.").arg(a.softcap).arg(a.cappedLogit, 0, 'f', 3);
    if (hasClean())
        t += delta ? QStringLiteral(" Edited model minus the clean one: the logit %1 (clean %2).")
                         .arg(signedNumber(a.logit - m_clean.logit))
                         .arg(m_clean.logit, 0, 'f', 3)
                   : QStringLiteral(" Edited model (clean logit %1).").arg(m_clean.logit, 0, 'f', 3);
    m_titleText = withWindowNote(*m_snapshot, t);
    m_title->setText(fittedTitle(m_plot, m_title, m_titleText, 0.3));
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

Mat<double> DlaView::matrix() const
{
    const Attribution &a = m_attr;
    Mat<double> m(a.layers, a.heads + 1);
    for (int l = 0; l < a.layers; ++l) {
        for (int h = 0; h < a.heads; ++h)
            m(l, h) = a.headAt(l, h);
        m(l, a.heads) = a.mlp[size_t(l)];
    }
    return m;
}

Mat<double> DlaView::deltaMatrix() const
{
    if (!hasClean())
        return Mat<double>();
    Mat<double> m = matrix();
    for (int l = 0; l < m_clean.layers; ++l) {
        for (int h = 0; h < m_clean.heads; ++h)
            m(l, h) -= m_clean.headAt(l, h);
        m(l, m_clean.heads) -= m_clean.mlp[size_t(l)];
    }
    return m;
}

QString DlaView::cellText(int layer, int column) const
{
    if (!hasAttribution() || layer < 0 || layer >= m_attr.layers || column < 0 || column > m_attr.heads)
        return QString();
    const double v = column == m_attr.heads ? m_attr.mlp[size_t(layer)] : m_attr.headAt(layer, column);
    QString what = column == m_attr.heads ? QStringLiteral("MLP of layer %1").arg(layer)
                                          : QStringLiteral("Layer %1, head %2").arg(layer).arg(column);
    if (m_seq2seq && column < m_attr.heads)
        what = QStringLiteral("Layer %1, %2 head %3")
                   .arg(layer)
                   .arg(column < m_s2s.heads ? QStringLiteral("self-attention") : QStringLiteral("cross-attention"))
                   .arg(column % m_s2s.heads);
    QString text = QStringLiteral("%1 adds %2 to the logit of “%3” (%4 % of it)")
                       .arg(what, signedNumber(v), QString::fromStdString(m_attr.targetToken))
                       .arg(m_attr.logit != 0 ? 100.0 * v / m_attr.logit : 0.0, 0, 'f', 1);
    if (hasClean()) {
        const double c = column == m_clean.heads ? m_clean.mlp[size_t(layer)] : m_clean.headAt(layer, column);
        text += QStringLiteral("\nclean model: %1 (edited − clean %2)").arg(signedNumber(c), signedNumber(v - c));
    }
    return text;
}

QPoint DlaView::cellCenter(int layer, int column) const
{
    QCPAxisRect *r = column >= m_attr.heads ? m_mlpRect : m_headRect;
    const double x = r->axis(QCPAxis::atBottom)->coordToPixel(column >= m_attr.heads ? 0 : column);
    const double y = r->axis(QCPAxis::atLeft)->coordToPixel(layer);
    return m_plot->mapTo(this, QPoint(int(x), int(y)));
}

} // namespace attnviz::ui
