// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/rolloutview.h"

#include "style/plotstyle.h"
#include "live/longtext.h"
#include "views/normweighting.h"
#include "views/plotfit.h"
#include "views/plotzoom.h"

#include "attnviz/attentiontiles.h"
#include "attnviz/headroles.h"
#include "attnviz/rolloutrow.h"

#include <qcustomplot.h>

#include <QCoreApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QPointer>
#include <QSpinBox>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
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
    relabelAfterLayout(m_plot, this, [this] {
        const QStringList labels = m_computedFor ? m_computedFor->queryLabels : QStringList();
        const bool x = labelTokenAxis(m_plot->xAxis, labels);
        const bool y = labelTokenAxis(m_plot->yAxis, labels);
        return x || y;
    });
    // drag a rectangle to zoom, Shift+drag to pan; double-click or Home: every token again
    m_zoom = new PlotZoom(m_plot, [this] {
        if (!m_row.empty()) { // a long text's one row: every key, the query's row
            m_plot->xAxis->setRange(-0.5, double(m_row.size()) - 0.5);
            m_plot->yAxis->setRange(m_rowQuery - 0.5, m_rowQuery + 0.5);
            return;
        }
        const int n = !m_rollout.empty() ? int(m_rollout[size_t(m_layer)].rows()) : 1;
        m_plot->xAxis->setRange(-0.5, n - 0.5);
        m_plot->yAxis->setRange(-0.5, n - 0.5);
    });
    connect(m_layerBox, &QSpinBox::valueChanged, this, &RolloutView::setRolloutLayer);
    connect(m_watcher, &QFutureWatcher<std::vector<Mat<double>>>::finished, this, [this] {
        if (m_watcher->isCanceled())
            return;
        m_rollout = m_watcher->result();
        m_row.clear();
        m_rowQuery = -1;
        m_computedFor = m_pending;
        showRollout();
        if (m_snapshot != m_computedFor) // a newer one arrived meanwhile
            rebuild();
    });
}

RolloutView::~RolloutView()
{
    cancelRow();
    m_watcher->waitForFinished();
}

void RolloutView::setSnapshot(SnapshotPtr snapshot)
{
    m_snapshot = std::move(snapshot);
    rebuild();
}

void RolloutView::setSelection(int layer, int, int query)
{
    const bool longText = m_snapshot && m_snapshot->longText;
    if (longText && query != m_query) { // a long text's row follows the selected query
        m_query = query;
        if (layer == m_layer || (m_snapshot && m_snapshot->layerIndex(layer) == m_layer)) {
            rebuild();
            return;
        }
    }
    m_query = query;
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
    if (deferred())
        return;
    if (m_snapshot && m_snapshot->longText)
        rebuild(); // a long text's row up to another layer is computed anew
    else
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
    if (!m_row.empty())
        return query == m_rowQuery && key >= 0 && key < int(m_row.size()) ? m_row[size_t(key)]
                                                                          : std::numeric_limits<double>::quiet_NaN();
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
    if (s && s->longText && s->hasResult() && !s->cross) {
        const int t = s->tq(), query = m_query < 0 || m_query >= t ? t - 1 : m_query;
        const int layer = s->layerIndex(m_layer);
        if (m_layerBox->maximum() != s->numLayers() - 1) {
            m_layerBox->blockSignals(true);
            m_layerBox->setRange(0, s->numLayers() - 1);
            m_layerBox->setValue(layer);
            m_layerBox->blockSignals(false);
        }
        if (s == m_computedFor && !m_row.empty() && m_rowQuery == query && m_rowLayer == layer)
            return showRow();
        if (m_rowRunning && m_rowAsked == s && m_askedQuery == query && m_askedLayer == layer)
            return; // being computed
        return startRow(s, query, layer);
    }
    cancelRow();
    m_row.clear();
    m_rowQuery = -1;
    m_rowFailed.clear();
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

void RolloutView::cancelRow()
{
    if (m_rowCancel)
        m_rowCancel->store(true);
    m_rowCancel.reset();
    m_rowRunning = false;
    m_rowAsked.reset();
    ++m_rowGen; // a result still on its way is dropped
}

void RolloutView::startRow(const SnapshotPtr &s, int query, int layer)
{
    cancelRow();
    m_row.clear();
    m_rowFailed.clear();
    m_rowRunning = true;
    m_rowAsked = s;
    m_askedQuery = query;
    m_askedLayer = layer;
    m_rowCancel = std::make_shared<std::atomic<bool>>(false);
    const quint64 gen = m_rowGen;
    const int layers = s->numLayers();
    const QString token = query < s->queryLabels.size() ? s->queryLabels[query] : QString();
    const auto computing = [query, layer, layers, token](int done) {
        return tr("Rolling out the row of query %L1 “%2” through layers 0–%3 of %4: %5 of %6 layers…")
            .arg(query)
            .arg(token)
            .arg(layer)
            .arg(layers)
            .arg(done)
            .arg(layer + 1);
    };
    m_map->setVisible(false);
    m_title->setText(computing(0));
    m_explain->setText(tr("A long text: the rollout of the selected query's row only (each layer's weights "
                          "recomputed row block by row block, no t × t matrix kept)."));
    m_plot->replot(QCustomPlot::rpQueuedReplot);
    QPointer<RolloutView> self(this);
    const std::shared_ptr<std::atomic<bool>> cancel = m_rowCancel;
    (void)QtConcurrent::run([s, query, layer, gen, self, cancel, computing] {
        RolloutRowRequest<float> rq;
        // each layer's tiles of its own, uncached: the Weights tab's caches stay as they are
        rq.layer = [s](int l) -> std::shared_ptr<const AttentionTiles<float>> {
            if (s->tiles) // norm-weighted where the switch is on
                return s->tiles->uncached(l);
            if (!AttentionTiles<float>::recomputable(*s->trace, l) && !s->trace->observed.weights)
                return nullptr;
            return std::make_shared<const AttentionTiles<float>>(*s->trace, l, AttentionTiles<float>::Source::Auto, 0);
        };
        rq.upTo = layer;
        rq.query = query;
        rq.cancel = cancel.get();
        rq.progress = [self, gen, computing](int done, int) {
            QMetaObject::invokeMethod(qApp, [self, gen, computing, done] {
                if (self && self->m_rowGen == gen && self->m_rowRunning) {
                    self->m_title->setText(computing(done));
                    self->m_plot->replot(QCustomPlot::rpQueuedReplot);
                }
            }, Qt::QueuedConnection);
        };
        std::vector<double> row;
        const Status st = rolloutRow(rq, row);
        if (st.code == StatusCode::Cancelled)
            return;
        const QString why = QString::fromStdString(st.message);
        QMetaObject::invokeMethod(qApp, [self, gen, s, query, layer, row = std::move(row), ok = st.ok(), why]() mutable {
            if (!self || self->m_rowGen != gen)
                return; // another query, layer or text was chosen meanwhile
            self->m_rowRunning = false;
            self->m_rowAsked.reset();
            self->m_rowCancel.reset();
            self->m_computedFor = s;
            self->m_rollout.clear();
            self->m_rowQuery = query;
            self->m_rowLayer = layer;
            self->m_row = ok ? std::move(row) : std::vector<double>();
            self->m_rowFailed = ok ? QString() : why;
            self->showRow();
        }, Qt::QueuedConnection);
    });
}

void RolloutView::showRow()
{
    const SnapshotPtr &s = m_computedFor;
    if (m_row.empty() || !s) {
        m_map->data()->clear();
        m_map->setVisible(false);
        m_title->setText(m_rowFailed.isEmpty() ? tr("Nothing to roll out yet.") : tr("Rollout: %1").arg(m_rowFailed));
        m_plot->replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    const int t = int(m_row.size());
    // each drawn cell the largest share of the keys it covers, as the Weights tab's map pools
    const int cells = std::min(t, kMaxDisplayCells);
    Mat<float> pooled(1, cells);
    for (int b = 0; b < cells; ++b) {
        const int j0 = int(int64_t(b) * t / cells), j1 = std::max(j0 + 1, int(int64_t(b + 1) * t / cells));
        pooled(0, b) = float(*std::max_element(m_row.begin() + j0, m_row.begin() + j1));
    }
    m_map->setData(pooledMapData(pooled, QRect(0, m_rowQuery, t, 1)), false);
    m_map->setVisible(true);
    m_scale->setGradient(weightsGradient());
    // the colour range: the largest share outside the query's own key (which keeps half of every layer's mix)
    double top = 0;
    for (int j = 0; j < t; ++j)
        if (j != m_rowQuery)
            top = std::max(top, m_row[size_t(j)]);
    m_map->setDataRange(QCPRange(0.0, std::max(1e-9, top > 0 ? top : m_row[size_t(m_rowQuery)])));
    if (t != m_zoomTokens || !m_zoom->isZoomed())
        m_zoom->reset();
    m_zoomTokens = t;
    const QString token = m_rowQuery < s->queryLabels.size() ? s->queryLabels[m_rowQuery] : QString();
    QString title = tr("Attention rollout of query %L1 “%2” up to layer %3 (layers 0–%3 of %4) · %5")
                        .arg(m_rowQuery)
                        .arg(token)
                        .arg(m_rowLayer)
                        .arg(s->numLayers())
                        .arg(s->modelLabel);
    title += QLatin1Char('\n') + tr("One query's row (a long text: rolled out per query)");
    if (cells < t)
        title += tr(" · each cell the largest of %L1 keys").arg((t + cells - 1) / cells);
    m_title->setText(title);
    m_explain->setText(explanationFor(isNormWeighted(*s)));
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void RolloutView::showRollout()
{
    if (m_rowRunning) // a long text's row: its progress stays in the title
        return;
    if (!m_row.empty() || !m_rowFailed.isEmpty())
        return showRow();

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
