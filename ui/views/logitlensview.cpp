// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/logitlensview.h"

#include "live/longtext.h"
#include "style/legibility.h"
#include "style/plotstyle.h"
#include "views/plotfit.h"
#include "views/readsplot.h"

#include "attnviz/seq2seqreads.h"

#include <qcustomplot.h>

#include <QElapsedTimer>
#include <QTimer>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <cmath>

namespace attnviz::ui {

namespace {

QString shown(const TokenProb &p)
{
    return QString::fromStdString(p.display.empty() ? p.token : p.display);
}

QString percent(double p)
{
    return std::isfinite(p) ? QStringLiteral("%1 %").arg(100.0 * p, 0, 'f', p < 0.001 ? 3 : 1) : QStringLiteral("–");
}

// An encoder-decoder model's decoder: its rows are the sub-layer stages (seq2seqreads.h).
bool stagesOf(const ComputeSnapshot &s) { return s.encoderDecoder; }

// One position's column: a row per layer, or per decoder stage.
Status columnOf(const ComputeSnapshot &s, const Trace<float> &trace, int position, std::vector<LensCell> &column)
{
    return stagesOf(s) ? seq2seqLensColumn(*s.model, trace, position, 5, column)
                       : lensColumn(*s.model, trace, position, 5, column);
}

// The whole grid (rows x positions) as LensGrid lays it out.
Status gridOf(const ComputeSnapshot &s, const LensOptions &opt, LensGrid &out)
{
    if (!stagesOf(s))
        return lensGrid(*s.model, *s.trace, opt, out);
    Seq2SeqLens g;
    if (Status st = seq2seqLens(*s.model, *s.trace, opt.topK, g, opt.cancel); !st)
        return st;
    out.layers = g.rows();
    out.positions = g.positions;
    out.topK = g.topK;
    out.cells = std::move(g.cells);
    if (opt.progress)
        opt.progress(out, 0, out.positions);
    return {};
}

} // namespace

LogitLensView::LogitLensView(QWidget *parent) : DeferredView(parent), m_plot(new QCustomPlot(this))
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    m_plot->setObjectName(QStringLiteral("logitLensPlot"));
    const TitledPlot titled = titledPlot(m_plot, this, QStringLiteral("Logit lens"), &m_titleText, 0.25);
    m_title = titled.title;
    QCPLayoutGrid *row = titled.row;
    m_gridRect = new QCPAxisRect(m_plot, true);
    for (QCPAxis *a : m_gridRect->axes())
        a->grid()->setVisible(false);
    m_gridRect->axis(QCPAxis::atBottom)->setTicker(QSharedPointer<QCPAxisTickerText>::create());
    // the input tokens slanted, as under a heatmap: upright, one long token ("<|endoftext|>") set the
    // spacing of all, and 13 tokens were labelled one in five
    m_gridRect->axis(QCPAxis::atBottom)->setTickLabelRotation(-60);
    m_gridRect->axis(QCPAxis::atBottom)->setLabel(QStringLiteral("position (the prediction after this token)"));
    m_gridRect->axis(QCPAxis::atLeft)->setLabel(QStringLiteral("after layer"));
    m_gridRect->axis(QCPAxis::atLeft)->setTicker(wholeNumberTicker());
    m_gridRect->axis(QCPAxis::atLeft)->setSubTicks(false);
    m_scale = new QCPColorScale(m_plot);
    m_scale->setType(QCPAxis::atRight);
    m_scale->setBarWidth(10);
    m_scale->axis()->setLabel(QStringLiteral("p(top token)"));
    QCPColorGradient g = weightsGradient();
    g.setNanHandling(QCPColorGradient::nhTransparent);
    m_scale->setGradient(g);
    m_scale->setDataRange(QCPRange(0, 1));
    m_lineRect = new QCPAxisRect(m_plot, true);
    m_lineRect->axis(QCPAxis::atTop)->setVisible(true);
    m_lineRect->axis(QCPAxis::atTop)->setTickLabels(true);
    m_lineRect->axis(QCPAxis::atBottom)->setLabel(QStringLiteral("p(actual next)"));
    m_lineRect->axis(QCPAxis::atTop)->setLabel(QStringLiteral("entropy (nats)"));
    m_lineRect->axis(QCPAxis::atBottom)->setRange(0, 1);
    m_lineRect->axis(QCPAxis::atLeft)->setTickLabels(false);
    m_lineRect->axis(QCPAxis::atLeft)->setTicker(wholeNumberTicker());
    m_lineRect->axis(QCPAxis::atLeft)->setSubTicks(false);
    fitValueTicks(m_lineRect->axis(QCPAxis::atBottom));
    fitValueTicks(m_lineRect->axis(QCPAxis::atTop));
    row->addElement(0, 0, m_gridRect);
    row->addElement(0, 1, m_scale);
    row->addElement(0, 2, m_lineRect);
    row->setColumnStretchFactors({1.0, 0.04, 0.3});
    auto *group = new QCPMarginGroup(m_plot); // the lines' layers level with the grid's rows
    for (QCPLayoutElement *e : std::initializer_list<QCPLayoutElement *>{m_gridRect, m_scale, m_lineRect})
        e->setMarginGroup(QCP::msTop | QCP::msBottom, group);
    m_map = new QCPColorMap(m_gridRect->axis(QCPAxis::atBottom), m_gridRect->axis(QCPAxis::atLeft));
    m_map->setColorScale(m_scale);
    m_map->setInterpolate(false);
    m_sel = new QCPItemRect(m_plot);
    m_sel->setClipAxisRect(m_gridRect);
    for (QCPItemPosition *p : {m_sel->topLeft, m_sel->bottomRight})
        p->setAxes(m_gridRect->axis(QCPAxis::atBottom), m_gridRect->axis(QCPAxis::atLeft));
    m_sel->setPen(QPen(QColor(220, 30, 30), 2));
    m_sel->setBrush(Qt::NoBrush);
    // vertical lines: the layer on the left axis (the key), the value along the bottom / top
    m_pLine = new QCPGraph(m_lineRect->axis(QCPAxis::atLeft), m_lineRect->axis(QCPAxis::atBottom));
    m_pLine->setPen(QPen(QColor(70, 110, 170), 2));
    m_pLine->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 6));
    m_pLine->setName(QStringLiteral("p(actual next)"));
    m_hLine = new QCPGraph(m_lineRect->axis(QCPAxis::atLeft), m_lineRect->axis(QCPAxis::atTop));
    m_hLine->setPen(QPen(QColor(200, 80, 40), 2, Qt::DashLine));
    m_hLine->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssSquare, 6));
    m_hLine->setName(QStringLiteral("entropy"));
    m_pClean = new QCPGraph(m_lineRect->axis(QCPAxis::atLeft), m_lineRect->axis(QCPAxis::atBottom));
    m_pClean->setPen(QPen(QColor(70, 110, 170, 150), 1.5, Qt::DotLine));
    m_pClean->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QColor(70, 110, 170, 150), 5));
    m_pClean->setName(QStringLiteral("p(actual next), clean model"));
    m_hClean = new QCPGraph(m_lineRect->axis(QCPAxis::atLeft), m_lineRect->axis(QCPAxis::atTop));
    m_hClean->setPen(QPen(QColor(200, 80, 40, 150), 1.5, Qt::DotLine));
    m_hClean->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssSquare, QColor(200, 80, 40, 150), 5));
    m_hClean->setName(QStringLiteral("entropy, clean model"));
    // each value axis in its line's colour, instead of a legend: an inset legend covered the lines'
    // points of the first layers, and the panel is too narrow for one beside them
    colourAxis(m_lineRect->axis(QCPAxis::atBottom), m_pLine->pen().color());
    colourAxis(m_lineRect->axis(QCPAxis::atTop), m_hLine->pen().color());

    // after each layout (a replot's or an export's, at the figure's size): the labels and cell
    // texts chosen for the axis rectangles' real sizes
    relabelAfterLayout(m_plot, this, [this] {
        // a long text's window of positions is labelled with the text's positions
        m_gridRect->axis(QCPAxis::atBottom)
            ->setProperty("attnvizPositionOffset", m_snapshot && m_snapshot->isWindow() ? m_snapshot->windowFirst : 0);
        bool changed = labelTokenAxis(m_gridRect->axis(QCPAxis::atBottom), m_labels, 8);
        changed |= fitLineLabel();
        fitCellTexts();
        return changed;
    });
    cellInteraction(
        m_plot, this,
        [this](const QPointF &pos, int &layer, int &position) {
            if (m_plot->axisRectAt(pos) != m_gridRect || m_grid.positions == 0)
                return false;
            position = int(std::lround(m_gridRect->axis(QCPAxis::atBottom)->pixelToCoord(pos.x())));
            layer = int(std::lround(m_gridRect->axis(QCPAxis::atLeft)->pixelToCoord(pos.y())));
            return position >= 0 && position < m_grid.positions && layer >= 0 && layer < m_grid.layers;
        },
        [this](int layer, int position) { return cellText(layer, position); },
        [this](int, int position) { emit querySelected(position); });
    m_start = new QTimer(this);
    m_start->setSingleShot(true);
    m_start->setInterval(120); // a burst of keystrokes starts one grid, after it
    connect(m_start, &QTimer::timeout, this, &LogitLensView::startGrid);
    rebuild();
}

LogitLensView::~LogitLensView() { cancelGrid(); }

QString LogitLensView::title() const { return m_title->text(); }

void LogitLensView::setSnapshot(SnapshotPtr snapshot)
{
    m_snapshot = std::move(snapshot);
    rebuild();
}

void LogitLensView::setSelection(int, int, int query)
{
    m_query = query;
    if (deferred())
        return;
    updateSelected();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void LogitLensView::cancelGrid()
{
    if (m_cancel)
        m_cancel->store(true);
    m_cancel.reset();
    if (m_start)
        m_start->stop();
}

void LogitLensView::rebuild()
{
    cancelGrid();
    ++m_gen;
    if (deferred())
        return;
    for (QCPItemText *t : m_texts)
        m_plot->removeItem(t);
    m_texts.clear();
    m_cellTexts.clear();
    m_grid = LensGrid();
    m_columnPending = -1;
    m_cleanColumn.clear();
    m_cleanPosition = m_cleanPending = -1;
    m_pClean->data()->clear();
    m_hClean->data()->clear();
    m_have.clear();
    m_filled = 0;
    m_labels.clear();
    m_pLine->data()->clear();
    m_hLine->data()->clear();
    QString why;
    const ComputeSnapshot *s = m_snapshot.get();
    if (!s)
        why = QStringLiteral("Computing…");
    else if (!s->hasResult())
        why = s->message;
    else if (!s->fromModel() || !s->model || !(s->modelInfo.causal || s->modelInfo.maskedLm))
        why = QStringLiteral("The logit lens reads a model's residual stream through its own language-model head: open a "
                             "checkpoint with one (GPT-2, Llama, Qwen, Gemma … or BERT's masked-LM head) under File › Open model.");
    if (!why.isEmpty())
        return showWhy(why);
    const bool stages = stagesOf(*s);
    // an encoder-decoder model: three rows a decoder layer, after self-attention, cross-attention, MLP
    const int L = stages ? 3 * s->numLayers() : s->numLayers(), t = s->tq();
    m_rowNames.clear();
    if (stages)
        for (int l = 0; l < s->numLayers(); ++l)
            for (DecoderStage st : {DecoderStage::Self, DecoderStage::Cross, DecoderStage::Mlp})
                m_rowNames << QString::fromStdString(decoderStageName(l, st));
    for (QCPAxis *a : {m_gridRect->axis(QCPAxis::atLeft), m_lineRect->axis(QCPAxis::atLeft)}) {
        if (stages) {
            auto ticker = QSharedPointer<QCPAxisTickerText>::create();
            for (int r = 0; r < L; ++r)
                ticker->addTick(r, m_rowNames[r]);
            a->setTicker(ticker);
        } else {
            a->setTicker(wholeNumberTicker());
        }
    }
    m_gridRect->axis(QCPAxis::atLeft)->setTickLabels(true);
    m_gridRect->axis(QCPAxis::atLeft)->setLabel(stages ? QStringLiteral("decoder, after") : QStringLiteral("after layer"));
    m_grid.layers = L;
    m_grid.positions = t;
    m_grid.topK = 5;
    m_grid.cells.assign(size_t(L) * size_t(t), LensCell());
    m_have.assign(size_t(t), 0);
    m_labels = s->queryLabels;
    auto *d = new QCPColorMapData(t, L, QCPRange(0, std::max(0, t - 1)), QCPRange(0, std::max(0, L - 1)));
    d->fill(std::nan(""));
    m_map->setData(d, false);
    m_gridRect->axis(QCPAxis::atBottom)->setRange(-0.5, t - 0.5);
    m_gridRect->axis(QCPAxis::atLeft)->setRange(-0.5, L - 0.5);
    m_lineRect->axis(QCPAxis::atLeft)->setRange(-0.5, L - 0.5);
    if (L * t <= kMaxTextCells) {
        QFont f = font();
        f.setPixelSize(std::max(minimumNumberPixels(), 10));
        for (int l = 0; l < L; ++l)
            for (int i = 0; i < t; ++i) {
                auto *tx = new QCPItemText(m_plot);
                tx->setClipAxisRect(m_gridRect);
                tx->position->setAxes(m_gridRect->axis(QCPAxis::atBottom), m_gridRect->axis(QCPAxis::atLeft));
                tx->position->setCoords(i, l);
                tx->setFont(f);
                tx->setProperty("attnviz.ownColour", true); // black or white on its cell (fitCellTexts), not the theme's
                tx->setText(QString());
                m_texts.push_back(tx);
            }
        m_cellTexts.assign(m_texts.size(), QString());
    }
    const QString kind = s->modelInfo.causal ? QStringLiteral("the token that follows") : QStringLiteral("the token itself");
    m_titleText = QStringLiteral("Logit lens — %1 · %2 layers\nEach cell: the token the model would predict from the residual "
                                 "stream after that layer (final norm, then the unembedding), coloured by its probability; "
                                 "hover for the top 5. Right, layer by layer: p(%3) (blue circles, lower scale) and the entropy "
                                 "(orange squares, upper scale).")
                      .arg(QString::fromStdString(s->modelInfo.name))
                      .arg(L)
                      .arg(kind);
    if (stages)
        m_titleText = QStringLiteral("Logit lens of the decoder — %1 · %2 layers, each after self-attention, cross-attention and the MLP\n"
                                     "Each cell: the target token the decoder would predict from the residual stream after that "
                                     "sub-layer (%3, then the unembedding), coloured by its probability; hover for the top 5. "
                                     "Right, stage by stage: p(the target token that follows) (blue circles, lower scale) and "
                                     "the entropy (orange squares, upper scale).")
                          .arg(QString::fromStdString(s->modelInfo.name))
                          .arg(s->numLayers())
                          .arg(s->modelInfo.architecture.placement == NormPlacement::Post
                                   ? QStringLiteral("post-norm: each stage is already normalized as the head reads the last")
                                   : QStringLiteral("the final norm"));
    m_titleText = withWindowNote(*s, m_titleText);
    if (s->trace->edited() && s->cleanTrace)
        m_titleText += QStringLiteral(" Edited model (%1): the dotted lines are the clean model's.")
                           .arg(describeAblations(s->edits));
    m_title->setText(fittedTitle(m_plot, m_title, m_titleText, 0.25));
    updateSelected(); // asks for the selected column first
    m_start->start();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void LogitLensView::showWhy(const QString &why)
{
    m_titleText = QStringLiteral("Logit lens\n") + why;
    m_title->setText(fittedTitle(m_plot, m_title, m_titleText, 1.0));
    m_map->data()->clear();
    m_sel->setVisible(false);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void LogitLensView::showColumn()
{
    if (m_position < 0 || m_position >= m_grid.positions || m_have[size_t(m_position)] || m_columnPending == m_position)
        return;
    // on a pool thread as the grid, first: the keystroke's own views are not kept waiting for it
    m_columnPending = m_position;
    const SnapshotPtr snapshot = m_snapshot;
    const quint64 gen = m_gen;
    const int position = m_position;
    QPointer<LogitLensView> self(this);
    (void)QtConcurrent::run([snapshot, gen, position, self] {
        QElapsedTimer timer;
        timer.start();
        std::vector<LensCell> column;
        const Status st = columnOf(*snapshot, *snapshot->trace, position, column);
        const double ms = double(timer.nsecsElapsed()) / 1e6;
        QMetaObject::invokeMethod(qApp, [self, gen, position, column = std::move(column), ms, st] {
            if (!self || self->m_gen != gen)
                return;
            self->m_columnPending = -1;
            if (!st) { // said in the title, not left "computing" for ever
                self->cancelGrid();
                return self->showWhy(QString::fromStdString(st.message));
            }
            self->m_columnMs = ms;
            self->fill(position, column, 1);
        }, Qt::QueuedConnection);
    });
}

void LogitLensView::showCleanColumn()
{
    const ComputeSnapshot *s = m_snapshot.get();
    if (!s || !s->trace || !s->trace->edited() || !s->cleanTrace ||
        s->cleanTrace->tokens.size() != s->trace->tokens.size() || m_position < 0 || m_position == m_cleanPosition ||
        m_position == m_cleanPending)
        return;
    m_cleanPending = m_position;
    const SnapshotPtr snapshot = m_snapshot;
    const quint64 gen = m_gen;
    const int position = m_position;
    QPointer<LogitLensView> self(this);
    (void)QtConcurrent::run([snapshot, gen, position, self] {
        std::vector<LensCell> column;
        const Status st = columnOf(*snapshot, *snapshot->cleanTrace, position, column);
        QMetaObject::invokeMethod(
            qApp,
            [self, gen, position, column = std::move(column), st]() mutable {
                if (!self || self->m_gen != gen || self->m_cleanPending != position)
                    return;
                self->m_cleanPending = -1;
                if (!st)
                    return; // the edited lines alone
                self->m_cleanColumn = std::move(column);
                self->m_cleanPosition = position;
                if (self->m_position == position) {
                    self->updateSelected();
                    self->m_plot->replot(QCustomPlot::rpQueuedReplot);
                }
            },
            Qt::QueuedConnection);
    });
}

void LogitLensView::completeNow()
{
    if (!m_snapshot || m_grid.positions == 0 || complete())
        return;
    cancelGrid();
    LensGrid g;
    if (!gridOf(*m_snapshot, LensOptions(), g))
        return;
    std::vector<LensCell> cells;
    for (int i = 0; i < g.positions; ++i)
        for (int l = 0; l < g.layers; ++l)
            cells.push_back(g.at(l, i));
    fill(0, cells, g.positions);
}

void LogitLensView::startGrid()
{
    if (!m_snapshot || m_grid.positions == 0 || complete())
        return;
    auto cancel = std::make_shared<std::atomic<bool>>(false);
    m_cancel = cancel;
    const SnapshotPtr snapshot = m_snapshot; // keeps the trace and the model alive on the pool thread
    const quint64 gen = m_gen;
    QPointer<LogitLensView> self(this);
    (void)QtConcurrent::run([snapshot, cancel, gen, self] {
        QElapsedTimer timer;
        timer.start();
        LensOptions opt; // (16 positions a chunk: a GEMM of 16 x layers rows per scan of the vocabulary)
        opt.cancel = cancel.get();
        opt.progress = [&](const LensGrid &g, int first, int count) {
            std::vector<LensCell> cells;
            cells.reserve(size_t(count) * size_t(g.layers));
            for (int k = 0; k < count; ++k)
                for (int l = 0; l < g.layers; ++l)
                    cells.push_back(g.at(l, first + k));
            // read on the GUI thread only: the view may be gone, or on a newer snapshot
            QMetaObject::invokeMethod(qApp, [self, gen, first, count, cells = std::move(cells), ms = double(timer.nsecsElapsed()) / 1e6] {
                if (self && self->m_gen == gen) {
                    self->m_gridMs = ms;
                    self->fill(first, cells, count);
                }
            }, Qt::QueuedConnection);
            return !cancel->load();
        };
        LensGrid grid;
        (void)gridOf(*snapshot, opt, grid);
    });
}

void LogitLensView::fill(int first, const std::vector<LensCell> &cells, int count)
{
    const int L = m_grid.layers;
    if (int(cells.size()) < count * L)
        return;
    for (int k = 0; k < count; ++k) {
        const int i = first + k;
        if (i < 0 || i >= m_grid.positions)
            continue;
        for (int l = 0; l < L; ++l)
            m_grid.at(l, i) = cells[size_t(k) * size_t(L) + size_t(l)];
        if (!m_have[size_t(i)]) {
            m_have[size_t(i)] = 1;
            ++m_filled;
        }
    }
    drawCells(first, count);
    if (m_position >= first && m_position < first + count)
        updateSelected();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
    if (complete())
        emit gridComplete();
}

void LogitLensView::drawCells(int first, int count)
{
    for (int k = 0; k < count; ++k) {
        const int i = first + k;
        if (i < 0 || i >= m_grid.positions)
            continue;
        for (int l = 0; l < m_grid.layers; ++l) {
            const LensCell &c = m_grid.at(l, i);
            const double p = c.computed() ? c.top.front().p : std::nan("");
            m_map->data()->setCell(i, l, p);
            if (!m_texts.empty() && c.computed()) // coloured and fitted before each replot (fitCellTexts)
                m_cellTexts[size_t(l) * size_t(m_grid.positions) + size_t(i)] = shown(c.top.front());
        }
    }
}

void LogitLensView::fitCellTexts()
{
    if (m_texts.empty())
        return;
    QCPAxis *x = m_gridRect->axis(QCPAxis::atBottom);
    const double cell = std::abs(x->coordToPixel(1) - x->coordToPixel(0)) - 4;
    // the window's 10 px; a publication figure writes every token, the font shrinking to what the
    // widest needs down to the figure's least (6 px) before any is cut
    QFont f = m_texts.front()->font();
    int px = std::max(minimumNumberPixels(), 10);
    if (publicationFigure())
        for (; px > minimumNumberPixels(); --px) {
            f.setPixelSize(px);
            const QFontMetricsF m(f);
            if (std::all_of(m_cellTexts.begin(), m_cellTexts.end(), [&](const QString &t) { return m.horizontalAdvance(t) <= cell; }))
                break;
        }
    f.setPixelSize(px);
    for (QCPItemText *t : m_texts)
        t->setFont(f);
    const QFontMetrics fm(f);
    QCPColorGradient g = m_scale->gradient(); // the theme's, as drawn now (the window may change it)
    for (size_t k = 0; k < m_texts.size(); ++k) {
        const LensCell &c = m_grid.cells[k];
        if (c.computed())
            m_texts[k]->setColor(textOn(QColor::fromRgb(g.color(c.top.front().p, QCPRange(0, 1)))));
        // a text cut to the cell's width; none where not even two characters fit (hover has it)
        const QString t = fm.elidedText(m_cellTexts[k], Qt::ElideRight, int(cell));
        m_texts[k]->setText(t.size() < std::min<qsizetype>(2, m_cellTexts[k].size()) || (t.size() <= 2 && t.endsWith(QChar(0x2026))) ? QString() : t);
    }
}

void LogitLensView::updateSelected()
{
    const int t = m_grid.positions;
    m_position = t == 0 ? -1 : m_query < 0 || m_query >= t ? t - 1 : m_query;
    m_sel->setVisible(m_position >= 0);
    m_pLine->data()->clear();
    m_hLine->data()->clear();
    m_pClean->data()->clear();
    m_hClean->data()->clear();
    if (m_position < 0)
        return;
    m_sel->topLeft->setCoords(m_position - 0.5, m_grid.layers - 0.5);
    m_sel->bottomRight->setCoords(m_position + 0.5, -0.5);
    showCleanColumn(); // an edited model: the clean model's column beside, when it comes
    if (!m_have[size_t(m_position)]) {
        showColumn(); // fills when it comes, and comes back here
        return;
    }
    double hi = 0;
    for (int l = 0; l < m_grid.layers; ++l) {
        const LensCell &c = m_grid.at(l, m_position);
        if (std::isfinite(c.actualP))
            m_pLine->addData(l, c.actualP);
        m_hLine->addData(l, c.entropy);
        hi = std::max(hi, c.entropy);
    }
    if (hasClean())
        for (int l = 0; l < m_grid.layers && l < int(m_cleanColumn.size()); ++l) {
            const LensCell &c = m_cleanColumn[size_t(l)];
            if (std::isfinite(c.actualP))
                m_pClean->addData(l, c.actualP);
            m_hClean->addData(l, c.entropy);
            hi = std::max(hi, c.entropy);
        }
    m_lineRect->axis(QCPAxis::atTop)->setRange(0, hi > 0 ? hi * 1.1 : 1);
    fitLineLabel();
}

bool LogitLensView::fitLineLabel()
{
    // two lines, the token elided to the panel's width (one line ran past the panel's right edge)
    QCPAxis *a = m_lineRect->axis(QCPAxis::atBottom);
    QString label = QStringLiteral("p(actual next)");
    if (m_position >= 0 && m_position < m_labels.size()) {
        if (m_pLine->data()->isEmpty()) {
            label += QStringLiteral(":\nnone after the last token");
        } else {
            const QFontMetricsF fm(a->labelFont());
            const double room = std::max(40, m_lineRect->outerRect().width());
            const QString token = m_labels.value(m_position);
            QString second;
            for (int chars = std::min(12, int(token.size())); chars >= 1; --chars) {
                second = QStringLiteral("after “%1”").arg(elide(token, chars));
                if (fm.horizontalAdvance(second) <= room)
                    break;
            }
            label += QStringLiteral("\n") + second;
        }
    }
    if (a->label() == label)
        return false;
    a->setLabel(label);
    return true;
}

Mat<double> LogitLensView::topProbabilities() const
{
    Mat<double> m(m_grid.layers, m_grid.positions);
    for (int l = 0; l < m_grid.layers; ++l)
        for (int i = 0; i < m_grid.positions; ++i) {
            const LensCell &c = m_grid.at(l, i);
            m(l, i) = c.computed() ? c.top.front().p : std::nan("");
        }
    return m;
}

QString LogitLensView::cellText(int layer, int position) const
{
    if (layer < 0 || layer >= m_grid.layers || position < 0 || position >= m_grid.positions)
        return QString();
    const LensCell &c = m_grid.at(layer, position);
    if (!c.computed())
        return QStringLiteral("%1, position %2: computing…")
            .arg(layer < m_rowNames.size() ? m_rowNames[layer] : QStringLiteral("Layer %1").arg(layer))
            .arg(position + (m_snapshot && m_snapshot->isWindow() ? m_snapshot->windowFirst : 0));
    QStringList top;
    for (const TokenProb &p : c.top)
        top << QStringLiteral("“%1” %2").arg(shown(p), percent(p.p));
    QString s = QStringLiteral("After %1, at “%2” (position %3)\nTop 5: %4\n")
                    .arg(layer < m_rowNames.size() ? m_rowNames[layer] : QStringLiteral("layer %1").arg(layer))
                    .arg(m_labels.value(position))
                    .arg(position + (m_snapshot && m_snapshot->isWindow() ? m_snapshot->windowFirst : 0))
                    .arg(top.join(QStringLiteral(", ")));
    if (c.actualRank > 0) {
        const bool causal = m_snapshot && m_snapshot->modelInfo.causal;
        const QString actual = causal ? m_labels.value(position + 1) : m_labels.value(position);
        s += QStringLiteral("%1 “%2”: %3, rank %L4\n").arg(causal ? QStringLiteral("Actual next") : QStringLiteral("The token itself"), actual,
                                                         percent(c.actualP)).arg(c.actualRank);
    }
    s += QStringLiteral("Entropy %1 nats").arg(c.entropy, 0, 'f', 2);
    if (hasClean() && position == m_cleanPosition && layer < int(m_cleanColumn.size()) &&
        m_cleanColumn[size_t(layer)].computed()) {
        const LensCell &k = m_cleanColumn[size_t(layer)];
        s += QStringLiteral("\nClean model: “%1” %2").arg(shown(k.top.front()), percent(k.top.front().p));
        if (c.actualRank > 0 && k.actualRank > 0)
            s += QStringLiteral(", p(actual) %1 (edited − clean %2%3 points)")
                     .arg(percent(k.actualP))
                     .arg(c.actualP >= k.actualP ? QStringLiteral("+") : QString())
                     .arg(100.0 * (c.actualP - k.actualP), 0, 'f', 1);
        s += QStringLiteral(", entropy %1 nats (edited − clean %2%3)")
                 .arg(k.entropy, 0, 'f', 2)
                 .arg(c.entropy >= k.entropy ? QStringLiteral("+") : QString())
                 .arg(c.entropy - k.entropy, 0, 'f', 2);
    }
    return s;
}

QVector<double> LogitLensView::actualLine() const
{
    QVector<double> v;
    for (auto it = m_pLine->data()->constBegin(); it != m_pLine->data()->constEnd(); ++it)
        v << it->value;
    return v;
}

QVector<double> LogitLensView::entropyLine() const
{
    QVector<double> v;
    for (auto it = m_hLine->data()->constBegin(); it != m_hLine->data()->constEnd(); ++it)
        v << it->value;
    return v;
}

QVector<double> LogitLensView::cleanActualLine() const
{
    QVector<double> v;
    for (auto it = m_pClean->data()->constBegin(); it != m_pClean->data()->constEnd(); ++it)
        v << it->value;
    return v;
}

QVector<double> LogitLensView::cleanEntropyLine() const
{
    QVector<double> v;
    for (auto it = m_hClean->data()->constBegin(); it != m_hClean->data()->constEnd(); ++it)
        v << it->value;
    return v;
}

} // namespace attnviz::ui
