// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/rolloutview.h"

#include "style/plotstyle.h"
#include "views/normweighting.h"
#include "views/plotfit.h"
#include "views/plotzoom.h"

#include "attnviz/headroles.h"

#include <qcustomplot.h>

#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <cmath>
#include <limits>

namespace attnviz::ui {

namespace {
constexpr int kMaxDisplayCells = 512;
}

RolloutView::RolloutView(QWidget *parent)
    : DeferredView(parent), m_watcher(new QFutureWatcher<std::vector<Mat<double>>>(this)), m_plot(new QCustomPlot(this))
{
    m_layerBox = new QSpinBox(this);
    m_layerBox->setObjectName(QStringLiteral("rolloutLayer"));
    m_layerBox->setRange(0, 0);
    auto *bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Rollout up to layer:"), this));
    bar->addWidget(m_layerBox);
    bar->addStretch(1);
    m_explain = new QLabel(this);
    m_explain->setObjectName(QStringLiteral("rolloutExplanation"));
    m_explain->setWordWrap(true);
    m_explain->setText(explanationFor(false));
    m_plot->setObjectName(QStringLiteral("rolloutPlot"));
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(bar);
    layout->addWidget(m_plot, 1);
    layout->addWidget(m_explain);

    const TokenHeatmap h = makeTokenHeatmap(m_plot, tr("input token"), tr("token"), tr("rollout"),
                                            QFont(font().family(), 10, QFont::Bold));
    m_map = h.map;
    m_scale = h.scale;
    m_title = h.title;
    fitValueTicks(m_scale->axis()); // the window at 1280 × 720 gives the scale ~100 px
    connect(m_plot, &QCustomPlot::afterLayout, this, [this] {
        const QStringList labels = m_computedFor ? m_computedFor->queryLabels : QStringList();
        const bool x = labelTokenAxis(m_plot->xAxis, labels);
        const bool y = labelTokenAxis(m_plot->yAxis, labels);
        replotToSettle(m_plot, x || y);
    });
    // drag a rectangle to zoom, Shift+drag to pan; double-click or Home: every token again
    m_zoom = new PlotZoom(m_plot, [this] {
        const int n = ready() ? int(m_rollout[size_t(m_layer)].rows()) : 1;
        m_plot->xAxis->setRange(-0.5, n - 0.5);
        m_plot->yAxis->setRange(-0.5, n - 0.5);
    });
    connect(m_layerBox, &QSpinBox::valueChanged, this, &RolloutView::setRolloutLayer);
    connect(m_watcher, &QFutureWatcher<std::vector<Mat<double>>>::finished, this, [this] {
        if (m_watcher->isCanceled())
            return;
        m_rollout = m_watcher->result();
        m_computedFor = m_pending;
        showRollout();
        if (m_snapshot != m_computedFor) // a newer one arrived meanwhile
            rebuild();
    });
}

RolloutView::~RolloutView()
{
    m_watcher->waitForFinished();
}

void RolloutView::setSnapshot(SnapshotPtr snapshot)
{
    m_snapshot = std::move(snapshot);
    rebuild();
}

void RolloutView::setSelection(int layer, int, int)
{
    setRolloutLayer(layer);
}

void RolloutView::setRolloutLayer(int layer)
{
    if (m_snapshot)
        layer = m_snapshot->layerIndex(layer);
    if (layer == m_layer)
        return;
    m_layer = layer;
    if (m_layerBox->value() != layer && layer <= m_layerBox->maximum())
        m_layerBox->setValue(layer);
    if (!deferred())
        showRollout();
}

QString RolloutView::title() const
{
    return m_title->text();
}
QString RolloutView::explanationFor(bool normWeighted)
{
    return normWeighted
        ? tr("Norm-weighted attention rollout: each layer's ‖α·v·W_O‖, averaged over heads and each row taken as shares "
             "of its sum, is mixed half-and-half with the identity for the residual connection, and the layers are "
             "multiplied in order — row i shows how much token i's state after the chosen layer draws on each input "
             "token, weighing each head by what it moves rather than by where it looks.")
        : tr("Attention rollout (Abnar & Zuidema 2020): each layer's attention, averaged over heads, is "
             "mixed half-and-half with the identity for the residual connection, its rows renormalised, "
             "and the layers are multiplied in order — row i shows how much token i's state after the "
             "chosen layer draws on each input token, the residual path counted.");
}

QString RolloutView::explanation() const
{
    return m_explain->text();
}

double RolloutView::value(int query, int key) const
{
    if (m_layer < 0 || m_layer >= int(m_rollout.size()))
        return std::numeric_limits<double>::quiet_NaN();
    const Mat<double> &r = m_rollout[size_t(m_layer)];
    if (query < 0 || key < 0 || query >= r.rows() || key >= r.cols())
        return std::numeric_limits<double>::quiet_NaN();
    return r(query, key);
}

double RolloutView::cellValue(int query, int key) const
{
    double v = std::numeric_limits<double>::quiet_NaN();
    int ki = 0, vi = 0;
    m_map->data()->coordToCell(key, query, &ki, &vi);
    if (ready())
        v = m_map->data()->cell(ki, vi);
    return v;
}

void RolloutView::rebuild()
{
    if (deferred())
        return;
    const SnapshotPtr s = m_snapshot;
    if (s == m_computedFor && ready())
        return showRollout();
    if (!s || !s->hasResult() || s->cross) {
        m_rollout.clear();
        m_computedFor = s;
        return showRollout();
    }
    if (s->tq() <= kSyncTokens) {
        m_rollout = attentionRollout(*s->trace);
        m_computedFor = s;
        return showRollout();
    }
    if (m_watcher->isRunning())
        return; // the finished handler comes back here for the newest snapshot
    m_pending = s;
    m_title->setText(tr("Rolling out %L1 tokens through %2 layers…").arg(s->tq()).arg(s->numLayers()));
    m_plot->replot(QCustomPlot::rpQueuedReplot);
    m_watcher->setFuture(QtConcurrent::run([s] { return attentionRollout(*s->trace); }));
}

void RolloutView::showRollout()
{
    const SnapshotPtr &s = m_computedFor;
    const int layers = int(m_rollout.size());
    if (ready()) { // (the layer chosen before a first rollout is kept)
        m_layerBox->blockSignals(true);
        m_layerBox->setRange(0, layers - 1);
        m_layer = std::clamp(m_layer, 0, layers - 1);
        m_layerBox->setValue(m_layer);
        m_layerBox->blockSignals(false);
    }
    if (!ready()) {
        m_map->data()->clear();
        m_map->setVisible(false);
        m_title->setText(s && s->cross                ? tr("Rollout needs self-attention (one sentence).")
                         : s && !s->message.isEmpty() ? s->message
                                                      : tr("Nothing to roll out yet."));
        m_plot->replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    m_explain->setText(explanationFor(s && isNormWeighted(*s)));
    const Mat<float> r = m_rollout[size_t(m_layer)].cast<float>();
    int pool = 1;
    m_map->setData(colorMapData(r, nullptr, kMaxDisplayCells, &pool), false);
    m_map->setVisible(true);
    m_scale->setGradient(weightsGradient());
    // the colour range: the largest value outside row 0 (a causal model's first token draws only on
    // itself: 1 there would leave every other row dark); row 0 is clipped to the top colour
    const double top = r.rows() > 1 ? double(r.bottomRows(r.rows() - 1).maxCoeff()) : double(r.maxCoeff());
    m_map->setDataRange(QCPRange(0.0, std::max(1e-9, top)));
    // another length of text: the whole matrix; another layer or setting keeps the region looked at
    if (int(r.rows()) != m_zoomTokens || !m_zoom->isZoomed())
        m_zoom->reset();
    m_zoomTokens = int(r.rows());
    QString t =
        tr("Attention rollout up to layer %1 (layers 0–%1 of %2) · %3").arg(m_layer).arg(layers).arg(s->modelLabel);
    if (pool > 1)
        t += tr(" (drawn as means of %1 × %1 blocks)").arg(pool);
    m_title->setText(t);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

} // namespace attnviz::ui
