// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/pipelineview.h"

#include "style/cellpaint.h"
#include "style/legibility.h"

#include "style/plotstyle.h"
#include "views/plotzoom.h"

#include <qcustomplot.h>

#include <QFontInfo>
#include <QFrame>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSplitter>
#include <QTextBrowser>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

namespace attnviz::ui {

using Kind = PipelineView::StageKind;

namespace {

constexpr int kMaxTerms = 12;      // terms written out in a sum before "…"
constexpr int kMaxHatchCells = 256 * 256;
constexpr int kBoxWidth = 320;
constexpr int kPlotHeight = 280;

QString num(double v)
{
    if (std::isnan(v))
        return QStringLiteral("NaN");
    if (std::isinf(v))
        return v < 0 ? QStringLiteral("−∞") : QStringLiteral("∞");
    return QString::number(v, 'f', 4);
}

QString esc(const QString &s) { return s.toHtmlEscaped(); }

QString shape(Eigen::Index r, Eigen::Index c) { return QStringLiteral("%1 × %2").arg(r).arg(c); }

// "a×b + c×d + …": the first kMaxTerms products of a sum, then how many are left out.
template <typename F>
QString termList(int n, F term)
{
    QStringList t;
    for (int k = 0; k < n && k < kMaxTerms; ++k)
        t << term(k);
    QString s = t.join(QStringLiteral(" + "));
    if (n > kMaxTerms)
        s += QStringLiteral(" + … (%1 more terms)").arg(n - kMaxTerms);
    return s;
}

QStringList indexLabels(Eigen::Index n)
{
    QStringList l;
    for (Eigen::Index k = 0; k < n; ++k)
        l << QString::number(k);
    return l;
}

// The attention settings a trace was computed with: the controls' for the word-vector models; a
// model folder's own arithmetic (softmax of q·k/√d_head, causal for GPT-2, padding as clicked).
ComputeSettings effectiveSettings(const ComputeSnapshot &s)
{
    ComputeSettings c = s.settings;
    if (!s.fromModel())
        return c;
    c = ComputeSettings();
    const bool padded = !s.paddedKeys.empty();
    c.mask = s.modelInfo.causal ? (padded ? MaskChoice::CausalPadding : MaskChoice::Causal)
                                : (padded ? MaskChoice::Padding : MaskChoice::None);
    if (!s.customMask.empty())
        c.mask = MaskChoice::Custom;
    return c;
}

// A sliding-window layer's extra mask, said after the causal one (Mistral, Gemma, Qwen's window layers).
// The stages, in the order the view shows them: one row per stage, with whether it applies to the
// snapshot's layer (null: always). A stage a model's architecture adds (rotary positions, a gate)
// is a row here, its matrix a case of fillStage and its arithmetic a case of explainText.
struct StageSpec {
    Kind kind;
    bool (*applies)(const ComputeSnapshot &s, int layer);
};
bool crossAttention(const ComputeSnapshot &s, int) { return s.cross; }
// q and k turned by rotary positions (or normalized per head) after the projection
bool turnedQK(const ComputeSnapshot &s, int layer) { return s.seq(layer).qPre.size() != 0; }
const StageSpec kStageSpecs[] = {
    {Kind::Input, nullptr},          {Kind::KeyInput, crossAttention}, {Kind::Q, nullptr},
    {Kind::K, nullptr},              {Kind::V, nullptr},               {Kind::QRotated, turnedQK},
    {Kind::KRotated, turnedQK},      {Kind::RawScores, nullptr},       {Kind::Scaled, nullptr},
    {Kind::Masked, nullptr},         {Kind::Weights, nullptr},         {Kind::Context, nullptr},
    {Kind::Concat, nullptr},         {Kind::Output, nullptr},
};

QString slidingWindowNote(const Architecture &a, int layer)
{
    const int w = layer >= 0 && layer < int(a.window.size()) ? a.window[size_t(layer)] : 0;
    return w > 0 ? QCoreApplication::translate("PipelineView", " This layer slides a window of %1 tokens: keys %1 or "
                                                               "more tokens back are hatched too.").arg(w)
                 : QString();
}

// A real checkpoint whose blocks normalize the residual stream before attention (GPT-2, Llama, Gemma).
bool preNorm(const ComputeSnapshot &s)
{
    return s.modelInfo.architecture.layers > 0 && s.modelInfo.architecture.placement != NormPlacement::Post;
}

// The norm before the projections, as the formulas name it.
QString normName(const ComputeSnapshot &s)
{
    return s.modelInfo.architecture.norm == NormKind::LayerNorm ? QStringLiteral("LN₁") : QStringLiteral("RMSNorm₁");
}

// What turns q and k after the projection: "rotary positions", "the per-head norm and rotary positions".
QString turnWords(const ComputeSnapshot &s)
{
    const Architecture &a = s.modelInfo.architecture;
    const bool rotary = a.positions == PositionKind::Rotary;
    if (a.qkNorm)
        return rotary ? PipelineView::tr("the per-head norm and rotary positions") : PipelineView::tr("the per-head norm");
    return PipelineView::tr("rotary positions");
}

} // namespace

// Draws over a stage's colour map: mask hatching, numbers when the cells are large enough, and
// the outlines of the cells related to the last click.
class StageOverlay : public QCPLayerable {
public:
    StageOverlay(QCustomPlot *plot, QCPAxisRect *rect, QCPColorMap *map)
        : QCPLayerable(plot, QStringLiteral("main"))
        , m_rect(rect)
        , m_map(map)
    {
    }

    const Mat<float> *matrix = nullptr;
    const BoolMat *mask = nullptr; // hatched cells; null = none
    QVector<QRect> bands;          // related rows/columns (x = column, y = row)
    QRect cell;                    // the clicked cell; null = none

protected:
    void applyDefaultAntialiasingHint(QCPPainter *p) const override { applyAntialiasingHint(p, false, QCP::aeOther); }
    QRect clipRect() const override { return m_rect->rect(); }

    QRectF cellRect(int r0, int c0, int r1, int c1) const { return cellPixels(m_rect, r0, c0, r1, c1); }

    void draw(QCPPainter *p) override
    {
        if (!matrix || matrix->size() == 0)
            return;
        const int rows = int(matrix->rows()), cols = int(matrix->cols());
        const CellRange all{0, rows - 1, 0, cols - 1};
        if (mask && mask->rows() == rows && mask->cols() == cols && rows * cols <= kMaxHatchCells)
            paintMaskedCells(p, m_rect, *mask, all);
        const QRectF one = cellRect(0, 0, 0, 0);
        // the largest font up to 9 pt (12 px) in which "−0.00" fits a cell, never below the readable
        // minimum (legibility.h); none past 64 × 64 cells. Four decimals, as the lessons and the
        // explanations quote them, where "−0.0000" fits in a font as large (issue 14).
        // no room kept for a minus sign where no entry has one (the weights): at 18 px the weights'
        // six columns drew no numbers at 1920 × 1080 while the scores beside them did (issue 14)
        const bool negative = rows * cols <= 64 * 64 && (matrix->array() < 0.0f).any();
        const QString minus = negative ? QStringLiteral("−") : QString();
        const auto f = rows * cols <= 64 * 64
            ? cellNumberFont(parentPlot(), p->font(), one.size(), minus + QStringLiteral("0.00"), 12.0)
            : std::optional<QFont>();
        if (rows * cols > 64 * 64)
            parentPlot()->setProperty("attnvizCellNumberPx", 0);
        const QVariant px = parentPlot()->property("attnvizCellNumberPx");
        const auto f4 = f ? cellNumberFont(parentPlot(), p->font(), one.size(), minus + QStringLiteral("0.0000"), 12.0)
                          : std::optional<QFont>();
        const bool four = f4 && QFontInfo(*f4).pixelSize() >= QFontInfo(*f).pixelSize();
        if (!four)
            parentPlot()->setProperty("attnvizCellNumberPx", px);
        if (f)
            paintCellNumbers(
                p, m_rect, m_map, *matrix, all, four ? *f4 : *f,
                [four](float v) {
                    return !std::isfinite(v) ? num(v)
                        : std::abs(v) < 10   ? QString::number(double(v), 'f', four ? 4 : 2)
                                             : QString::number(double(v), 'g', four ? 5 : 3);
                },
                [this](int i, int j) { return mask && mask->size() && (*mask)(i, j); }); // the hatching says it
        for (const QRect &b : bands)
            paintOutline(p, cellRect(b.top(), b.left(), b.bottom(), b.right()), QColor(240, 140, 0), 2, 3.5, Qt::DashLine);
        if (!cell.isNull())
            paintOutline(p, cellRect(cell.top(), cell.left(), cell.bottom(), cell.right()), QColor(220, 20, 20), 2.5, 4);
    }

private:
    QCPAxisRect *m_rect;
    QCPColorMap *m_map;
};

// One stage: a header (always shown), the heatmap with its formula as title, a caption, and a
// message in place of the heatmap when the stage cannot be drawn.
class PipelineStage : public QFrame {
public:
    Kind kind;
    QString name, title, caption, message;
    QString shownTitle; // the title text as this stage last set it (an export may add a line meanwhile)
    QLabel *header = nullptr, *captionLabel = nullptr, *messageLabel = nullptr, *hiddenLabel = nullptr;
    QCustomPlot *plot = nullptr;
    QCPColorMap *map = nullptr;
    QCPColorScale *scale = nullptr;
    QCPTextElement *titleElement = nullptr;
    StageOverlay *overlay = nullptr;
    PlotZoom *zoom = nullptr; // a dragged rectangle zooms; the wheel scrolls the stages instead
    QSize home{1, 1};         // the whole matrix, columns × rows
    QPoint pressPos;
    Mat<float> owned;
    const Mat<float> *matrix = nullptr;
    QStringList rowLabels, colLabels;
    bool revealed = true;

    PipelineStage(Kind k, QWidget *parent)
        : QFrame(parent)
        , kind(k)
    {
        setFrameShape(QFrame::StyledPanel);
        setFixedWidth(kBoxWidth);
        auto *l = new QVBoxLayout(this);
        l->setContentsMargins(6, 4, 6, 6);
        l->setSpacing(2);
        header = new QLabel(this);
        QFont hf = header->font();
        hf.setBold(true);
        header->setFont(hf);
        l->addWidget(header);

        plot = new QCustomPlot(this);
        plot->setFixedHeight(kPlotHeight);
        plot->setFocusPolicy(Qt::NoFocus);
        plot->setCursor(Qt::PointingHandCursor);
        QCPAxisRect *rect = plot->axisRect();
        setTokenAxes(rect);
        for (QCPAxis *a : {plot->xAxis, plot->yAxis}) {
            QFont f = a->tickLabelFont();
            f.setPointSizeF(8);
            a->setTickLabelFont(f);
            QFont lf = a->labelFont();
            lf.setPointSizeF(8);
            a->setLabelFont(lf);
        }
        map = new QCPColorMap(plot->xAxis, plot->yAxis);
        map->setInterpolate(false);
        map->setAntialiased(false);
        map->setTightBoundary(false);
        zoom = new PlotZoom(plot, [this] {
            plot->xAxis->setRange(-0.5, home.width() - 0.5);
            plot->yAxis->setRange(-0.5, home.height() - 0.5);
        }, PlotZoom::Options{false, 1.0, false});
        plot->setFocusPolicy(Qt::NoFocus); // the step keys stay with the pipeline
        scale = new QCPColorScale(plot);
        scale->setGradient(divergingGradient());
        auto *row = new QCPLayoutGrid;
        plot->plotLayout()->take(rect);
        plot->plotLayout()->simplify();
        plot->plotLayout()->addElement(0, 0, row);
        row->addElement(0, 0, rect);
        row->addElement(0, 1, scale);
        row->setColumnStretchFactor(1, 0.01);
        scale->setType(QCPAxis::atRight);
        scale->setBarWidth(9);
        QFont sf = scale->axis()->tickLabelFont();
        sf.setPointSizeF(7);
        scale->axis()->setTickLabelFont(sf);
        map->setColorScale(scale);
        auto *group = new QCPMarginGroup(plot);
        rect->setMarginGroup(QCP::msBottom | QCP::msTop, group);
        scale->setMarginGroup(QCP::msBottom | QCP::msTop, group);
        plot->plotLayout()->insertRow(0);
        plot->plotLayout()->setRowStretchFactor(0, 0.01);
        titleElement = new QCPTextElement(plot, QString(), QFont(font().family(), 9, QFont::Bold));
        plot->plotLayout()->addElement(0, 0, titleElement);
        overlay = new StageOverlay(plot, rect, map);
        l->addWidget(plot);

        messageLabel = new QLabel(this);
        messageLabel->setWordWrap(true);
        messageLabel->setFixedHeight(kPlotHeight);
        messageLabel->setAlignment(Qt::AlignCenter);
        messageLabel->setStyleSheet(QStringLiteral("color: palette(dark); border: 1px dashed palette(mid); padding: 12px"));
        messageLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
        l->addWidget(messageLabel);
        hiddenLabel = new QLabel(this);
        hiddenLabel->setFixedHeight(kPlotHeight);
        hiddenLabel->setAlignment(Qt::AlignCenter);
        // colours by palette role, not a style sheet: a sheet's palette() is read once, and kept the
        // light theme's white block in high contrast (issue 14)
        hiddenLabel->setAutoFillBackground(true);
        hiddenLabel->setBackgroundRole(QPalette::AlternateBase);
        hiddenLabel->setForegroundRole(QPalette::PlaceholderText);
        l->addWidget(hiddenLabel);

        captionLabel = new QLabel(this);
        captionLabel->setWordWrap(true);
        captionLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
        captionLabel->setMinimumHeight(2 * captionLabel->fontMetrics().lineSpacing() + 4);
        captionLabel->setAlignment(Qt::AlignTop | Qt::AlignLeft);
        l->addWidget(captionLabel);

        connect(plot, &QCustomPlot::afterLayout, plot, [this] {
            const bool x = labelTokenAxis(plot->xAxis, colLabels, 10);
            const bool y = labelTokenAxis(plot->yAxis, rowLabels, 10);
            // a title too wide for the card breaks between formula and shape, then at spaces,
            // never cut (issue 14, 6)
            const QFontMetricsF fm(titleElement->font());
            const double avail = plot->width() - 12;
            QStringList lines;
            for (const QString &part : title.split(QStringLiteral("   "), Qt::SkipEmptyParts)) {
                const QString joined = lines.isEmpty() ? part : lines.last() + QStringLiteral("   ") + part;
                if (!lines.isEmpty() && fm.horizontalAdvance(joined) <= avail)
                    lines.last() = joined;
                else
                    lines << part;
            }
            for (QString &l : lines)
                if (fm.horizontalAdvance(l) > avail && avail > 40)
                    l = wrapText(l, std::max(8, int(avail / std::max(1.0, fm.averageCharWidth()))));
            const QString text = lines.join(QLatin1Char('\n'));
            const bool t = titleElement->text() == shownTitle && text != shownTitle;
            if (t) {
                titleElement->setText(text);
                shownTitle = text;
            }
            if (x || y || t)
                plot->replot(QCustomPlot::rpQueuedReplot);
        });
    }

    void applyVisibility()
    {
        const bool drawn = message.isEmpty();
        plot->setVisible(revealed && drawn);
        messageLabel->setVisible(revealed && !drawn);
        captionLabel->setVisible(revealed);
        hiddenLabel->setVisible(!revealed);
    }
};

QFont PipelineView::explanationMono()
{
    // DejaVu Sans Mono (fonts-dejavu-core, which attnviz depends on), not whatever "monospace"
    // resolves to: with fonts-noto-mono installed that is Noto Sans Mono, a third taller a line, and
    // the explanation's last numbers fell below its view; the system's monospace only where DejaVu
    // is missing
    QFont mono(QStringLiteral("DejaVu Sans Mono"));
    mono.setStyleHint(QFont::Monospace);
    if (!QFontInfo(mono).exactMatch())
        mono = QFont(QStringLiteral("monospace"));
    mono.setStyleHint(QFont::Monospace);
    return mono;
}

void PipelineView::styleHeadNote()
{
    QPalette p = m_headNote->palette();
    p.setColor(QPalette::WindowText, readableOn(QColor(176, 90, 0), palette().color(QPalette::Window), 4.5));
    m_headNote->setPalette(p);
    QFont f = font();
    f.setBold(true);
    m_headNote->setFont(f);
}

void PipelineView::changeEvent(QEvent *e)
{
    DeferredView::changeEvent(e);
    if ((e->type() == QEvent::PaletteChange || e->type() == QEvent::FontChange) && m_headNote)
        styleHeadNote();
}

PipelineView::PipelineView(QWidget *parent)
    : DeferredView(parent)
{
    setFocusPolicy(Qt::StrongFocus);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->setSpacing(4);

    // step bar
    auto *bar = new QHBoxLayout;
    m_first = new QPushButton(tr("Step from the start"), this);
    m_prev = new QToolButton(this);
    m_prev->setText(QStringLiteral("◀"));
    m_prev->setToolTip(tr("Previous stage (Left, Page Up)"));
    m_next = new QToolButton(this);
    m_next->setText(QStringLiteral("▶"));
    m_next->setToolTip(tr("Next stage (Right, Page Down, Space)"));
    m_all = new QPushButton(tr("Show all"), this);
    for (QWidget *w : std::initializer_list<QWidget *>{m_first, m_prev, m_next, m_all})
        w->setFocusPolicy(Qt::NoFocus); // Space and the arrows step the view, never press a button
    m_stepLabel = new QLabel(this);
    m_stepLabel->setObjectName(QStringLiteral("pipelineStepLabel"));
    m_headNote = new QLabel(this);
    m_headNote->setObjectName(QStringLiteral("pipelineHeadNote"));
    m_headNote->setWordWrap(true); // a long note wraps; it never sets the window's minimum width (issue 14)
    styleHeadNote();
    bar->addWidget(m_first);
    bar->addWidget(m_prev);
    bar->addWidget(m_stepLabel);
    bar->addWidget(m_next);
    bar->addWidget(m_all);
    bar->addStretch(1);
    layout->addLayout(bar);
    // its own row: beside the buttons a narrow window wrapped it a word a line, and the bar grew as tall
    layout->addWidget(m_headNote);
    connect(m_first, &QPushButton::clicked, this, [this] { setCurrentStage(0); });
    connect(m_prev, &QToolButton::clicked, this, &PipelineView::previousStage);
    connect(m_next, &QToolButton::clicked, this, &PipelineView::nextStage);
    connect(m_all, &QPushButton::clicked, this, &PipelineView::showAllStages);

    auto *split = new QSplitter(Qt::Horizontal, this);
    m_scroll = new QScrollArea(split);
    m_scroll->setFocusPolicy(Qt::NoFocus);
    m_scroll->setWidgetResizable(true);
    m_gridHost = new QWidget(m_scroll);
    m_grid = new QGridLayout(m_gridHost);
    m_grid->setContentsMargins(4, 4, 4, 4);
    m_grid->setSpacing(8);
    m_grid->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    m_scroll->setWidget(m_gridHost);
    m_scroll->viewport()->installEventFilter(this); // as many columns as the viewport holds
    m_explain = new QTextBrowser(split);
    m_explain->setObjectName(QStringLiteral("pipelineExplanation"));
    m_explain->setFocusPolicy(Qt::NoFocus);
    m_explain->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_explain->setMinimumWidth(220);
    m_explain->installEventFilter(this); // its width follows its text size (presentation mode)
    m_explain->setHtml(tr("<p><b>How was it computed?</b></p><p>Click a cell in any stage to see the arithmetic "
                          "behind that number, with the actual values.</p>"));
    split->addWidget(m_scroll);
    split->addWidget(m_explain);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 1);
    split->setSizes({700, 260});
    layout->addWidget(split, 1);
    rebuild();
}

PipelineView::~PipelineView() = default;

void PipelineView::setSnapshot(SnapshotPtr snapshot)
{
    m_snapshot = std::move(snapshot);
    rebuild();
}

void PipelineView::setSelection(int layer, int head, int)
{
    if (head == m_head && layer == m_layer)
        return;
    m_layer = layer;
    m_head = head;
    rebuild();
}

int PipelineView::shownHead() const
{
    if (!m_shown || !m_shown->hasResult())
        return 0;
    return std::clamp(m_head, 0, std::max(0, m_shown->attention(m_layer).numHeads - 1));
}

PipelineStage *PipelineView::stage(Kind kind) const
{
    for (PipelineStage *s : m_stages)
        if (s->kind == kind)
            return s;
    return nullptr;
}

int PipelineView::indexOf(StageKind kind) const
{
    for (int i = 0; i < m_stages.size(); ++i)
        if (m_stages[i]->kind == kind)
            return i;
    return -1;
}

PipelineView::StageKind PipelineView::stageKind(int i) const { return m_stages.at(i)->kind; }
QString PipelineView::stageName(int i) const { return i >= 0 && i < m_stages.size() ? m_stages[i]->name : QString(); }
QString PipelineView::stageTitle(int i) const { return i >= 0 && i < m_stages.size() ? m_stages[i]->title : QString(); }
QString PipelineView::stageFigureTitle(int i) const
{
    if (i < 0 || i >= m_stages.size() || !m_shown || !m_shown->hasResult())
        return {};
    return QStringLiteral("%1. %2 — %3").arg(i + 1).arg(m_stages[i]->name, describeConfig(*m_shown, m_layer, shownHead(), HeadDisplay::One));
}
QString PipelineView::stageCaption(int i) const
{
    return i >= 0 && i < m_stages.size() ? m_stages[i]->caption : QString();
}
QString PipelineView::stageMessage(int i) const
{
    return i >= 0 && i < m_stages.size() ? m_stages[i]->message : QString();
}
bool PipelineView::stageRevealed(int i) const { return i >= 0 && i < m_stages.size() && m_stages[i]->revealed; }
QCustomPlot *PipelineView::stagePlot(int i) const { return i >= 0 && i < m_stages.size() ? m_stages[i]->plot : nullptr; }

QString PipelineView::explanation() const { return m_explain->toPlainText(); }

QVector<QRect> PipelineView::highlights(int i) const
{
    if (i < 0 || i >= m_stages.size())
        return {};
    QVector<QRect> r = m_stages[i]->overlay->bands;
    if (!m_stages[i]->overlay->cell.isNull())
        r.prepend(m_stages[i]->overlay->cell);
    return r;
}

// ---- building the stages -------------------------------------------------------------------

void PipelineView::buildStages()
{
    const bool ok = m_shown && m_shown->hasResult();
    QVector<Kind> kinds;
    for (const StageSpec &spec : kStageSpecs)
        if (!spec.applies || (ok && spec.applies(*m_shown, m_layer)))
            kinds << spec.kind;
    bool same = kinds.size() == m_stages.size();
    for (int i = 0; same && i < kinds.size(); ++i)
        same = m_stages[i]->kind == kinds[i];
    if (same)
        return;
    for (PipelineStage *s : m_stages)
        delete s;
    m_stages.clear();
    m_columns = 0;
    for (Kind k : kinds) {
        auto *s = new PipelineStage(k, m_gridHost);
        s->plot->installEventFilter(this);
        connect(s->plot, &QCustomPlot::mousePress, this, [s](QMouseEvent *e) { s->pressPos = e->pos(); });
        connect(s->plot, &QCustomPlot::mouseRelease, this, [this, s](QMouseEvent *e) {
            if (e->button() != Qt::LeftButton || (e->pos() - s->pressPos).manhattanLength() > 4)
                return; // (a drag zooms)
            const int idx = int(m_stages.indexOf(s));
            int r = 0, c = 0;
            if (idx >= 0 && cellAt(idx, e->pos(), r, c))
                explainCell(idx, r, c);
            setFocus(Qt::MouseFocusReason);
        });
        m_stages << s;
    }
    if (m_current >= stageCount() - 1)
        m_current = -1;
    relayout();
}

void PipelineView::relayout()
{
    // as many columns of at least kBoxWidth as the viewport holds, sharing its whole width; the
    // plots grow with the cards up to most of the viewport's height (issue 14, 7)
    const int spacing = m_grid->spacing();
    const int avail = m_scroll->viewport()->width() - 8 - m_scroll->verticalScrollBar()->sizeHint().width();
    // cards grow with the text (presentation mode): a stage of tiny cells under large labels reads
    // worse than fewer, larger stages (issue 14)
    int box = presentationLegibility() ? std::max(kBoxWidth, fontMetrics().averageCharWidth() * 40) : kBoxWidth;
    const int highest = std::max(kPlotHeight, int(m_scroll->viewport()->height() * 0.7));
    int least = kPlotHeight;
    if (presentationLegibility()) {
        // and wide and high enough for the numbers of the stages that can hold them (at most 64 × 64
        // cells, as StageOverlay draws) at the 18 px minimum, where the screen allows: 4 columns of
        // "−0.00" did not fit cards sized by the text alone (at 1920 × 1080 the Output stage of the
        // two-head preset drew none, issue 14). What is not the cells (labels, colour scale, title) is
        // taken from each stage's last layout.
        QFont f = font();
        f.setPixelSize(minimumNumberPixels());
        const QFontMetricsF fm(f);
        const double cellW = fm.horizontalAdvance(QStringLiteral("−0.00")) + 2, cellH = fm.height();
        for (PipelineStage *s : m_stages) {
            const Mat<float> *m = s->overlay->matrix;
            if (!m || m->size() == 0 || m->rows() * m->cols() > 64 * 64)
                continue;
            const QRect r = s->plot->axisRect()->rect();
            const int besideW = r.width() > 0 ? s->plot->width() - r.width() : 220;
            const int besideH = r.height() > 0 ? s->plot->height() - r.height() : 160;
            const int needW = int(std::ceil(m->cols() * (cellW + 4))) + besideW + 16; // the card's margins and frame
            const int needH = int(std::ceil(m->rows() * cellH)) + besideH;
            if (needW <= avail)
                box = std::max(box, needW);
            if (needH <= highest)
                least = std::max(least, needH);
        }
    }
    const int cols = std::max(1, (avail + spacing) / (box + spacing));
    const int width = std::max(box, (avail - (cols - 1) * spacing) / cols);
    const int plotHeight = std::clamp(int(width * 0.85), least, std::max(least, highest));
    for (PipelineStage *s : m_stages) {
        if (s->width() != width)
            s->setFixedWidth(width);
        for (QWidget *w : std::initializer_list<QWidget *>{s->plot, s->messageLabel, s->hiddenLabel})
            if (w->height() != plotHeight)
                w->setFixedHeight(plotHeight);
    }
    if (cols == m_columns)
        return;
    m_columns = cols;
    for (PipelineStage *s : m_stages)
        m_grid->removeWidget(s);
    for (int i = 0; i < m_stages.size(); ++i)
        m_grid->addWidget(m_stages[i], i / cols, i % cols);
}

bool PipelineView::eventFilter(QObject *o, QEvent *e)
{
    if (o == m_scroll->viewport() && e->type() == QEvent::Resize) {
        relayout();
        if (m_focus >= 0)
            keepFocusInView();
    }
    // in presentation mode the explanation holds a line of three numbers in its own (1.6×) text:
    // narrower, its lines wrapped until the context row at its end needed scrolling on a 1280 × 720
    // screen (issue 14); in the window it keeps its 220 px
    if (o == m_explain && e->type() == QEvent::FontChange) {
        QFont mono = explanationMono();
        mono.setPixelSize(QFontInfo(m_explain->font()).pixelSize());
        const int line = QFontMetrics(mono).horizontalAdvance(QStringLiteral("−0.0000, −0.0000, −0.0000,"));
        const int chrome = 2 * m_explain->frameWidth() + 2 * int(m_explain->document()->documentMargin())
            + m_explain->verticalScrollBar()->sizeHint().width();
        m_explain->setMinimumWidth(presentationLegibility() ? std::max(220, line + chrome) : 220);
    }
    // the wheel over a stage scrolls the stages (the plots do not zoom) (issue 14, 7)
    if (e->type() == QEvent::Wheel && o != m_scroll->viewport() && qobject_cast<QCustomPlot *>(o)) {
        QCoreApplication::sendEvent(m_scroll->verticalScrollBar(), e);
        return true;
    }
    return DeferredView::eventFilter(o, e);
}

void PipelineView::rebuild()
{
    if (deferred())
        return;
    const int refocus = m_focus >= 0 && m_shown == m_snapshot && m_focusLayer == m_layer && m_focusHead == m_head ? m_focus : -1;
    m_shown = m_snapshot; // the stages point into this one until the next rebuild
    buildStages();
    m_queryLabels.clear();
    m_keyLabels.clear();
    m_raw.resize(0, 0);
    m_scaled.resize(0, 0);
    m_masked.resize(0, 0);
    m_scoresDerived = false;
    const SnapshotPtr &s = m_shown;
    const bool ok = s && s->hasResult();
    if (ok) {
        m_queryLabels = s->queryLabels;
        m_keyLabels = s->keyLabels;
        const SequenceResult<float> &r = s->seq(m_layer);
        const int h = shownHead(), dh = s->attention(m_layer).dHead;
        m_scale = s->attention(m_layer).scale;
        if (qint64(s->tq()) * s->tk() <= kMaxDerivedCells && r.q.cols() >= (h + 1) * dh && r.k.cols() >= (h + 1) * dh) {
            m_raw = r.q.middleCols(h * dh, dh) * r.k.middleCols(h * dh, dh).transpose();
            m_scaled = m_raw * float(m_scale);
            const float cap = float(s->attention(m_layer).softcap);
            if (cap > 0) // Gemma 2: the scaled scores soft-capped before the mask, as the model computes them
                m_scaled = ((m_scaled.array() / cap).tanh() * cap).matrix();
            m_masked = m_scaled;
            if (r.mask.size()) {
                const ComputeSettings c = effectiveSettings(*s);
                const Normalization n = c.normalization;
                const bool negInf = n == Normalization::Softmax && c.maskMethod == MaskMethod::NegInf;
                if (n != Normalization::Softmax || negInf) // multiply-renormalize masks after the softmax
                    for (Eigen::Index k = 0; k < m_masked.size(); ++k)
                        if (r.mask.data()[k])
                            m_masked.data()[k] = negInf ? -std::numeric_limits<float>::infinity() : 0.0f;
            }
            m_scoresDerived = true;
        }
        if (m_head < 0)
            m_headNote->setText(tr("“Average of heads” is selected: the per-head stages show head 0 of %1 (the "
                                   "average has no single Q, K, V).")
                                    .arg(s->attention(m_layer).numHeads));
        else if (const AttentionResult<float> &att = s->attention(m_layer); att.kvHeads > 0 && att.kvHeads < att.numHeads)
            m_headNote->setText(tr("Per-head stages show head %1 of %2; K and V its key/value head %3 of %4.")
                                    .arg(h)
                                    .arg(att.numHeads)
                                    .arg(att.kvHeadOf(h))
                                    .arg(att.kvHeads));
        else if (s->attention(m_layer).numHeads > 1)
            m_headNote->setText(tr("Per-head stages show head %1 of %2.").arg(h).arg(s->attention(m_layer).numHeads));
        else
            m_headNote->clear();
    } else {
        m_headNote->clear();
    }
    for (PipelineStage *st : m_stages)
        fillStage(*st);
    relayout(); // the cards' size follows the stages' shapes (presentation mode)
    clearHighlights();
    m_focus = -1;
    applyReveal();
    if (refocus >= 0)
        focusCell(refocus, m_focusRow, m_focusCol);
}

void PipelineView::fillStage(PipelineStage &st)
{
    const SnapshotPtr &s = m_shown;
    st.matrix = nullptr;
    st.owned.resize(0, 0);
    st.overlay->matrix = nullptr;
    st.overlay->mask = nullptr;
    st.message.clear();
    st.rowLabels.clear();
    st.colLabels.clear();
    const bool ok = s && s->hasResult();
    const int h = shownHead();
    const int dh = ok ? s->attention(m_layer).dHead : 0;
    const int H = ok ? s->attention(m_layer).numHeads : 0;
    const QString headSuffix = H > 1 ? QStringLiteral("_%1").arg(h) : QString(), &hs = headSuffix;
    const QString headWord = H > 1 ? tr(" of head %1").arg(h) : QString();
    const bool cross = ok && s->cross;
    const bool stack = ok && s->deep();
    const auto &proj = ok ? s->projections(m_layer) : std::shared_ptr<const Projections<float>>();
    const ComputeSettings c = ok ? effectiveSettings(*s) : ComputeSettings();
    const bool model = ok && s->fromModel();
    bool signedScale = true;
    bool hatch = false;
    QStringList *rows = &m_queryLabels, *cols = nullptr;
    QStringList dimLabels;
    QString xAxis = tr("dimension"), yAxis = tr("query");

    auto headCols = [&](const Mat<float> &m) {
        if (m.cols() >= (h + 1) * dh)
            st.owned = m.middleCols(h * dh, dh);
        st.matrix = &st.owned;
    };
    auto scoresMissing = [&] {
        st.message = tr("Not derived at this size: %1 × %2 scores per head (over %L3 cells). The live "
                        "computation keeps no score matrices; the weights stage below is exact.")
                         .arg(s->tq())
                         .arg(s->tk())
                         .arg(kMaxDerivedCells);
    };

    switch (st.kind) {
    case Kind::Input:
        st.name = stack ? tr("Residual stream") : tr("Input X");
        if (ok) {
            st.matrix = &s->queryInput(m_layer);
            st.title = (stack ? tr("X = residual stream into layer %1").arg(s->layerIndex(m_layer)) : tr("X = token embeddings"))
                + QStringLiteral("   ") + shape(s->tq(), s->queryInput(m_layer).cols());
        }
        st.caption = model ? (s->layerIndex(m_layer) == 0 ? tr("One row per token: its embedding plus its position's, entering layer 0.")
                                                           : tr("One row per token: the residual stream entering this layer."))
                               + (preNorm(*s) ? tr(" The model normalizes it (%1) before the projections.").arg(normName(*s)) : QString())
            : cross ? tr("One row per query token: its word vector. Queries come from this sentence.")
                    : tr("One row per token: its word vector. Queries, keys and values all start here.");
        break;
    case Kind::KeyInput:
        st.name = tr("Key/value input");
        if (ok) {
            st.matrix = &s->keyInput(m_layer);
            st.title = tr("X_kv = key/value sentence") + QStringLiteral("   ") + shape(s->tk(), s->keyInput(m_layer).cols());
        }
        rows = &m_keyLabels;
        yAxis = tr("key");
        st.caption = tr("Cross-attention: keys and values come from the second sentence.");
        break;
    case Kind::Q:
    case Kind::K:
    case Kind::V: {
        const char *letter = st.kind == Kind::Q ? "Q" : st.kind == Kind::K ? "K" : "V";
        const QString L = QString::fromLatin1(letter), l = L.toLower();
        // grouped-query attention: K and V are one key/value head's, shared by a group of query heads
        const AttentionResult<float> *att = ok ? &s->attention(m_layer) : nullptr;
        const bool grouped = att && st.kind != Kind::Q && att->kvHeads > 0 && att->kvHeads < att->numHeads;
        const int kv = grouped ? att->kvHeadOf(h) : h, group = grouped ? att->numHeads / att->kvHeads : 1;
        st.name = L + (grouped ? tr(" of key/value head %1 (query heads %2–%3)").arg(kv).arg(kv * group).arg((kv + 1) * group - 1)
                               : headWord);
        const QString hs = grouped ? QStringLiteral("_kv%1").arg(kv) : headSuffix;
        if (st.kind != Kind::Q) {
            rows = &m_keyLabels;
            yAxis = tr("key");
        }
        if (ok) {
            const SequenceResult<float> &r = s->seq(m_layer);
            const bool turned = r.qPre.size() != 0; // Q and K as projected; the rotated stages follow
            headCols(st.kind == Kind::Q ? (turned ? r.qPre : r.q) : st.kind == Kind::K ? (turned ? r.kPre : r.k) : r.v);
            const Linear<float> *lin = !proj ? nullptr : st.kind == Kind::Q ? &proj->q : st.kind == Kind::K ? &proj->k : &proj->v;
            const QString x = st.kind != Kind::Q && cross ? QStringLiteral("X_kv") : QStringLiteral("X");
            QString f;
            if (model)
                f = QStringLiteral("%1%2 = %3·W_%4ᵀ + b_%4").arg(L, hs, preNorm(*s) ? normName(*s) + QStringLiteral("(X)") : QStringLiteral("X"), l);
            else if (stack)
                f = QStringLiteral("%1%2 = LN(X)·W_%3ᵀ").arg(L, hs, l);
            else if (!lin || lin->isIdentity())
                f = H > 1 ? QStringLiteral("%1%2 = %3[:, %4…%5]").arg(L, hs, x).arg(h * dh).arg((h + 1) * dh - 1)
                          : QStringLiteral("%1 = %2 (identity)").arg(L, x);
            else
                f = QStringLiteral("%1%2 = %3·W_%4ᵀ%5").arg(L, hs, x, l, lin->hasBias() ? QStringLiteral(" + b_") + l : QString());
            st.title = f + QStringLiteral("   ") + shape(st.owned.rows(), st.owned.cols());
        }
        st.caption = st.kind == Kind::Q   ? tr("Queries: what each token is looking for.")
            : st.kind == Kind::K          ? tr("Keys: what each token offers to be found by.")
                                          : tr("Values: what each token passes on when attended to.");
        if (ok && (!proj || (st.kind == Kind::Q ? proj->q : st.kind == Kind::K ? proj->k : proj->v).isIdentity()) && !stack)
            st.caption += tr(" Identity projection: a slice of X itself.");
        if (grouped)
            st.caption += tr(" Grouped-query attention: %1 key/value heads for %2 query heads, shown once per "
                             "group: key/value head %3 serves query heads %4–%5, so they all read these same %6.")
                              .arg(att->kvHeads)
                              .arg(att->numHeads)
                              .arg(kv)
                              .arg(kv * group)
                              .arg((kv + 1) * group - 1)
                              .arg(st.kind == Kind::K ? tr("keys") : tr("values"));
        if (ok && st.kind != Kind::V && s->seq(m_layer).qPre.size())
            st.caption += tr(" As projected, before %1: the next stages show them after.").arg(turnWords(*s));
        break;
    }
    case Kind::QRotated:
    case Kind::KRotated: {
        const bool q = st.kind == Kind::QRotated;
        const AttentionResult<float> *att = ok ? &s->attention(m_layer) : nullptr;
        const bool grouped = att && !q && att->kvHeads > 0 && att->kvHeads < att->numHeads;
        const int kv = grouped ? att->kvHeadOf(h) : h;
        const bool rotary = ok && s->modelInfo.architecture.positions == PositionKind::Rotary;
        const QString L = q ? QStringLiteral("Q") : QStringLiteral("K");
        st.name = (rotary ? tr("%1 rotated").arg(L) : tr("%1 normalized").arg(L))
            + (grouped ? tr(" of key/value head %1").arg(kv) : headWord);
        if (!q) {
            rows = &m_keyLabels;
            yAxis = tr("key");
        }
        if (ok) {
            const SequenceResult<float> &r = s->seq(m_layer);
            headCols(q ? r.q : r.k);
            const QString sub = grouped ? QStringLiteral("_kv%1").arg(kv) : hs;
            const Architecture &arch = s->modelInfo.architecture;
            QString f = L + sub;
            if (arch.qkNorm)
                f = QStringLiteral("RMSNorm(") + f + QStringLiteral(")");
            if (rotary)
                f = QStringLiteral("RoPE(") + f + QStringLiteral(", position)");
            st.title = QStringLiteral("%1%2 = %3   %4").arg(L, sub, f, shape(st.owned.rows(), st.owned.cols()));
        }
        st.caption = (q ? tr("Queries") : tr("Keys")) + QStringLiteral(" ") + tr("after %1.").arg(ok ? turnWords(*s) : QString());
        if (ok && s->modelInfo.architecture.positions == PositionKind::Rotary)
            st.caption += tr(" Each pair of dimensions is turned by an angle that grows with the token's position, so "
                             "q·k depends on how far apart two tokens are. The scores read these.");
        break;
    }
    case Kind::RawScores:
        st.name = tr("Raw scores");
        cols = &m_keyLabels;
        xAxis = tr("key");
        if (ok) {
            const AttentionResult<float> &att = s->attention(m_layer);
            const QString ks = att.kvHeads > 0 && att.kvHeads < att.numHeads ? QStringLiteral("_kv%1").arg(att.kvHeadOf(h)) : hs;
            st.title = QStringLiteral("S = Q%1·K%2ᵀ   %3").arg(hs, ks, shape(s->tq(), s->tk()));
            if (m_scoresDerived)
                st.matrix = &m_raw;
            else
                scoresMissing();
        }
        st.caption = tr("Dot product of each query row with each key row, before any scaling: "
                        "large when they point the same way.");
        break;
    case Kind::Scaled: {
        st.name = tr("Scaled scores");
        cols = &m_keyLabels;
        xAxis = tr("key");
        if (ok) {
            QString f;
            const Architecture &arch = s->modelInfo.architecture;
            const bool ownScale = model && arch.attentionScale > 0;
            switch (ownScale ? ScaleRule::Explicit : c.scaleRule) {
            case ScaleRule::InvSqrtDHead: f = QStringLiteral("S' = S / √%1  (× %2)").arg(dh).arg(num(m_scale)); break;
            case ScaleRule::InvSqrtDModel:
                f = QStringLiteral("S' = S / √d_model = S / √%1  (× %2)").arg(s->attention(m_layer).dModel).arg(num(m_scale));
                break;
            case ScaleRule::None: f = QStringLiteral("S' = S  (no scaling, × 1)"); break;
            case ScaleRule::Temperature:
                f = QStringLiteral("S' = S / (T·√%1), T = %2  (× %3)").arg(dh).arg(c.temperature, 0, 'g', 3).arg(num(m_scale));
                break;
            case ScaleRule::Explicit:
                f = ownScale ? QStringLiteral("S' = S / √query_pre_attn_scalar = S / √%1  (× %2)")
                                   .arg(1.0 / (arch.attentionScale * arch.attentionScale), 0, 'g', 6)
                                   .arg(num(m_scale))
                             : QStringLiteral("S' = S × %1").arg(num(m_scale));
                break;
            }
            if (s->attention(m_layer).softcap > 0)
                f += QStringLiteral(", then %1·tanh(S' / %1)").arg(s->attention(m_layer).softcap, 0, 'g', 4);
            st.title = f + QStringLiteral("   ") + shape(s->tq(), s->tk());
            if (m_scoresDerived)
                st.matrix = &m_scaled;
            else
                scoresMissing();
        }
        st.caption = c.scaleRule == ScaleRule::None
            ? tr("No scaling is configured: the scores go to the normalization as they are.")
            : tr("Scaled so that the scores do not grow with the vector width (%1).").arg(scaleRuleName(c.scaleRule));
        break;
    }
    case Kind::Masked: {
        st.name = tr("Masked scores");
        cols = &m_keyLabels;
        xAxis = tr("key");
        hatch = true;
        if (ok) {
            const bool any = s->seq(m_layer).mask.size() > 0;
            const Normalization n = c.normalization;
            QString f;
            if (!any)
                f = QStringLiteral("no mask: S'_m = S'");
            else if (n == Normalization::Softmax && c.maskMethod == MaskMethod::NegInf)
                f = QStringLiteral("S'_m = S', −∞ where masked");
            else if (n == Normalization::Softmax)
                f = QStringLiteral("mask M: softmax, × (1 − M), renormalize");
            else
                f = QStringLiteral("S'_m = S', 0 where masked");
            st.title = f + QStringLiteral("   ") + shape(s->tq(), s->tk());
            if (m_scoresDerived)
                st.matrix = &m_masked;
            else
                scoresMissing();
            st.caption = model && any && s->modelInfo.causal
                ? tr("Hatched keys are later tokens: a causal model (%1) lets each token see only itself and "
                     "what came before.").arg(QString::fromStdString(s->modelInfo.name))
                      + slidingWindowNote(s->modelInfo.architecture, m_layer)
                : !any ? tr("Mask: none (%1). Every query sees every key.").arg(maskName(c.mask))
                : n == Normalization::Softmax && c.maskMethod == MaskMethod::MultiplyRenormalize
                ? tr("Hatched keys (%1) are zeroed after the softmax and the rest rescaled to sum to 1.").arg(maskName(c.mask))
                : tr("Hatched keys (%1) are hidden from the query: they will get weight 0.").arg(maskName(c.mask));
        }
        break;
    }
    case Kind::Weights: {
        st.name = tr("Attention weights");
        cols = &m_keyLabels;
        xAxis = tr("key");
        hatch = true;
        signedScale = false;
        if (ok) {
            const Mat<float> &w = s->weights(m_layer, h);
            QString f;
            switch (c.normalization) {
            case Normalization::Softmax:
                f = c.maskMethod == MaskMethod::MultiplyRenormalize && s->seq(m_layer).mask.size()
                    ? QStringLiteral("A = renorm(softmax(S') · (1 − M))")
                    : QStringLiteral("A = softmax(S'_m)  (each row)");
                break;
            case Normalization::Sum: f = QStringLiteral("A = S'_m / row sum"); break;
            case Normalization::Cosine: f = QStringLiteral("A = cos(q_i, k_j)"); break;
            }
            if (c.dropout > 0)
                f = QStringLiteral("A = dropout_%1(%2)").arg(c.dropout, 0, 'g', 3).arg(f.mid(4));
            st.title = f + QStringLiteral("   ") + shape(s->tq(), s->tk());
            if (w.rows() == s->tq() && w.cols() == s->tk())
                st.matrix = &w;
            else
                st.message = tr("The backend did not read these weights back (only the displayed heads are, at "
                                "this size).");
            QString cap = c.normalization == Normalization::Softmax
                ? (c.dropout > 0 ? tr("Before dropout each row sums to 1: how much query i listens to key j.")
                                 : tr("Each row sums to 1: how much query i listens to key j."))
                : c.normalization == Normalization::Sum ? tr("Each row divided by its sum (no exponentials).")
                                                        : tr("Cosine similarity of q_i and k_j, not normalized.");
            if (c.dropout > 0)
                cap += tr(" After dropout (p = %1, seed %2): dropped weights are 0, the kept ones × 1/(1−p), so a "
                          "row no longer sums to 1.")
                           .arg(c.dropout, 0, 'g', 3)
                           .arg(c.dropoutSeed);
            if (!s->seq(m_layer).fullyMaskedRows.empty())
                cap += tr(" %n row(s) have every key masked: NaN, as in PyTorch.", "", int(s->seq(m_layer).fullyMaskedRows.size()));
            st.caption = cap;
        }
        break;
    }
    case Kind::Context:
        st.name = tr("Context") + headWord;
        if (ok) {
            headCols(s->seq(m_layer).context);
            st.title = QStringLiteral("C%1 = A·V%1   %2").arg(hs, shape(st.owned.rows(), st.owned.cols()));
        }
        st.caption = tr("Each query's new vector: the values mixed by that query's weights.");
        break;
    case Kind::Concat:
        st.name = tr("Concatenated heads");
        if (ok) {
            st.matrix = &s->seq(m_layer).context;
            st.title = (H > 1 ? QStringLiteral("concat(C_0 … C_%1)").arg(H - 1) : QStringLiteral("concat(C) = C"))
                + QStringLiteral("   %1 × %2·%3").arg(s->tq()).arg(H).arg(dh);
        }
        st.caption = H > 1 && dh == 1 ? tr("The %1 heads' contexts side by side (head h takes column h).").arg(H)
            : H > 1 ? tr("The %1 heads' contexts side by side (head h takes columns h·%2 … h·%2+%3).")
                          .arg(H)
                          .arg(dh)
                          .arg(dh - 1)
                    : tr("One head: the concatenation is that head's context.");
        break;
    case Kind::Output: {
        st.name = tr("Output");
        if (ok) {
            st.matrix = &s->seq(m_layer).output;
            const bool identity = !stack && (!proj || proj->o.isIdentity());
            st.title = (identity ? QStringLiteral("no W_o: O = concat")
                                 : QStringLiteral("O = concat·W_oᵀ%1").arg(!stack && proj->o.hasBias() ? QStringLiteral(" + b_o") : QString()))
                + QStringLiteral("   ") + shape(s->seq(m_layer).output.rows(), s->seq(m_layer).output.cols());
            st.caption = identity ? tr("Identity output projection: the output is the concatenation.")
                                  : tr("The output projection mixes the heads back into d_out = %1 numbers per token.")
                                        .arg(s->seq(m_layer).output.cols());
        }
        break;
    }
    }

    const bool dimStage = st.kind != Kind::RawScores && st.kind != Kind::Scaled && st.kind != Kind::Masked && st.kind != Kind::Weights;
    if (model && dimStage && st.matrix && st.matrix->cols() > kMaxShownDims) {
        // wide vectors (64-d heads, 768-d streams): the first columns at a readable size, and a
        // marker that says how many there are, rather than unreadable slivers
        const Eigen::Index all = st.matrix->cols();
        Mat<float> left = st.matrix->leftCols(kMaxShownDims);
        st.owned = std::move(left);
        st.matrix = &st.owned;
        xAxis = tr("dim 0–%1 … %2 dims").arg(kMaxShownDims - 1).arg(all);
        st.title += tr("  (%1 of %2 dims shown)").arg(kMaxShownDims).arg(all);
        st.caption += tr(" Dimensions 0–%1 of %2 shown; click a cell for its numbers.").arg(kMaxShownDims - 1).arg(all);
    }
    if (!ok) {
        st.title.clear();
        st.message = s ? s->message : tr("Computing…");
    }
    const int index = int(m_stages.indexOf(&st));
    st.header->setText(QStringLiteral("%1. %2").arg(index + 1).arg(st.name));
    st.hiddenLabel->setText(tr("Step %1: %2\n(▶ or → reveals it)").arg(index + 1).arg(st.name));
    st.captionLabel->setText(st.caption);
    st.messageLabel->setText(st.message);
    st.titleElement->setText(st.title);
    st.shownTitle = st.title;
    st.plot->xAxis->setLabel(xAxis);
    st.plot->yAxis->setLabel(yAxis);

    if (st.matrix && st.matrix->size() > 0 && st.message.isEmpty()) {
        const Mat<float> &m = *st.matrix;
        st.rowLabels = *rows;
        if (cols)
            st.colLabels = *cols;
        else
            st.colLabels = indexLabels(m.cols());
        const BoolMat *mask = hatch && s->seq(m_layer).mask.size() ? &s->seq(m_layer).mask : nullptr;
        // masked scores are −∞ (or 0) by construction: hatched, and left out of the colour range
        const bool excludeMasked = st.kind == Kind::Masked && mask;
        int pool = 1;
        st.map->setData(colorMapData(m, excludeMasked ? mask : nullptr, kMaxDisplayCells, &pool), false);
        st.map->data()->recalculateDataBounds();
        const QCPRange b = st.map->data()->dataBounds();
        double lo = std::isfinite(b.lower) ? b.lower : 0, hi = std::isfinite(b.upper) ? b.upper : 1;
        if (!signedScale && lo >= 0) {
            st.scale->setGradient(weightsGradient());
            // the weights follow the View menu's fixed 0–1 scale; other stages stay auto-ranged
            const QCPRange r = st.kind == Kind::Weights && fixedWeightScale() && hi <= 1.0 + 1e-6
                ? QCPRange(0.0, 1.0)
                : QCPRange(0.0, hi > 0 ? hi : 1.0);
            st.map->setDataRange(r);
            if (st.kind == Kind::Weights)
                st.scale->axis()->setLabel(weightScaleLabel(tr("weight"), r));
        } else {
            const double a = std::max(std::abs(lo), std::abs(hi));
            st.scale->setGradient(divergingGradient());
            st.map->setDataRange(QCPRange(-(a > 0 ? a : 1.0), a > 0 ? a : 1.0));
        }
        st.overlay->matrix = pool == 1 ? &m : nullptr; // numbers and hatching at full resolution only
        st.overlay->mask = mask;
        st.map->setVisible(true);
        // another shape: the whole matrix; otherwise the region looked at stays
        if (const QSize was = st.home; (st.home = QSize(int(m.cols()), int(m.rows()))) != was || !st.zoom->isZoomed())
            st.zoom->reset();
        if (pool > 1)
            st.caption += tr(" (Drawn as means of %1 × %1 blocks; clicks explain exact cells.)").arg(pool);
        st.captionLabel->setText(st.caption);
    } else {
        st.map->data()->clear();
        st.map->setVisible(false);
        if (st.message.isEmpty() && ok)
            st.message = tr("Nothing to show.");
        st.messageLabel->setText(st.message);
    }
    st.plot->replot(QCustomPlot::rpQueuedReplot);
}

// ---- stepping ------------------------------------------------------------------------------

void PipelineView::setCurrentStage(int stage)
{
    const int n = stageCount();
    const int v = stage < 0 || stage >= n ? -1 : stage;
    if (v == m_current)
        return;
    m_current = v;
    applyReveal();
    if (v >= 0) {
        scrollToStage(v);
        // again once the revealed stages have their sizes
        QTimer::singleShot(0, this, [this, v] {
            if (m_current == v)
                scrollToStage(v);
        });
    }
    emit stageChanged(m_current);
}

void PipelineView::scrollToStage(int stage)
{
    // the stage's header at the top of the view (ensureWidgetVisible showed the previous stage's tail
    // above a stage that fits, and centred one taller than the view, cutting its header and caption)
    QWidget *card = m_stages[stage];
    QWidget *content = m_scroll->widget();
    if (!card || !content)
        return;
    content->layout()->activate();
    const QPoint at = card->mapTo(content, QPoint(0, 0));
    m_scroll->verticalScrollBar()->setValue(at.y() - 4);
    const int left = m_scroll->horizontalScrollBar()->value(), width = m_scroll->viewport()->width();
    if (at.x() < left || at.x() + std::min(card->width(), width) > left + width)
        m_scroll->horizontalScrollBar()->setValue(at.x() - 4);
}

void PipelineView::nextStage()
{
    if (m_current >= 0)
        setCurrentStage(m_current + 1); // after the last stage: every stage
}

void PipelineView::previousStage()
{
    if (m_current < 0)
        setCurrentStage(stageCount() - 1);
    else if (m_current > 0)
        setCurrentStage(m_current - 1);
}

void PipelineView::showAllStages() { setCurrentStage(-1); }

void PipelineView::applyReveal()
{
    for (int i = 0; i < m_stages.size(); ++i) {
        m_stages[i]->revealed = m_current < 0 || i <= m_current;
        m_stages[i]->applyVisibility();
    }
    const int n = stageCount();
    const auto stepText = [this, n](int i) {
        return i < 0 ? tr("All %1 stages").arg(n) : tr("Step %1 of %2: %3").arg(i + 1).arg(n).arg(stageName(i));
    };
    // as wide as its longest text: the ▶ beside it stays where it is while the user steps
    int widest = 0;
    for (int i = -1; i < n; ++i)
        widest = std::max(widest, m_stepLabel->fontMetrics().horizontalAdvance(stepText(i)));
    m_stepLabel->setMinimumWidth(widest + 4);
    m_stepLabel->setAlignment(Qt::AlignCenter);
    m_stepLabel->setText(stepText(m_current));
    m_prev->setEnabled(m_current != 0 && n > 1);
    m_next->setEnabled(m_current >= 0);
    m_all->setEnabled(m_current >= 0);
}

void PipelineView::keyPressEvent(QKeyEvent *e)
{
    switch (e->key()) {
    case Qt::Key_Right:
    case Qt::Key_PageDown:
    case Qt::Key_Space:
        if (m_current < 0)
            setCurrentStage(0); // from "show all", stepping starts at the first stage
        else
            nextStage();
        return;
    case Qt::Key_Left:
    case Qt::Key_PageUp: previousStage(); return;
    default: DeferredView::keyPressEvent(e);
    }
}

// ---- clicks and explanations ---------------------------------------------------------------

bool PipelineView::cellAt(int i, const QPoint &pos, int &row, int &col) const
{
    if (i < 0 || i >= m_stages.size())
        return false;
    const PipelineStage &st = *m_stages[i];
    if (!st.matrix || !st.message.isEmpty() || !st.plot->axisRect()->rect().contains(pos))
        return false;
    col = int(std::lround(st.plot->xAxis->pixelToCoord(pos.x())));
    row = int(std::lround(st.plot->yAxis->pixelToCoord(pos.y())));
    return row >= 0 && col >= 0 && row < st.matrix->rows() && col < st.matrix->cols();
}

QPoint PipelineView::cellCenter(int i, int row, int col) const
{
    const PipelineStage &st = *m_stages.at(i);
    return QPoint(int(std::lround(st.plot->xAxis->coordToPixel(col))), int(std::lround(st.plot->yAxis->coordToPixel(row))));
}

bool PipelineView::focusCell(int i, int row, int col)
{
    if (!explainCell(i, row, col))
        return false;
    highlightRows(m_stages[i]->kind, row, row); // the row the text talks about, around its cell
    m_stages[i]->plot->replot(QCustomPlot::rpQueuedReplot);
    if (m_current >= 0 && m_current < i)
        setCurrentStage(i); // stepping: the stages up to this one are revealed
    m_focus = i;
    m_focusRow = row;
    m_focusCol = col;
    m_focusLayer = m_layer;
    m_focusHead = m_head;
    keepFocusInView();
    return true;
}

void PipelineView::keepFocusInView()
{
    // once the grid has its layout (the columns follow the viewport's width)
    QTimer::singleShot(0, this, [this] {
        if (m_focus >= 0 && m_focus < m_stages.size()) {
            m_gridHost->layout()->activate();
            m_scroll->ensureWidgetVisible(m_stages[m_focus], 4, 4);
        }
    });
}

void PipelineView::clearHighlights()
{
    for (PipelineStage *s : m_stages) {
        s->overlay->bands.clear();
        s->overlay->cell = QRect();
        s->plot->replot(QCustomPlot::rpQueuedReplot);
    }
}

void PipelineView::highlightRows(Kind kind, int r0, int r1)
{
    PipelineStage *s = stage(kind);
    if (s && s->matrix && s->matrix->size())
        s->overlay->bands << QRect(QPoint(0, r0), QPoint(int(s->matrix->cols()) - 1, r1));
}

void PipelineView::highlightCols(Kind kind, int c0, int c1)
{
    PipelineStage *s = stage(kind);
    if (s && s->matrix && s->matrix->size())
        s->overlay->bands << QRect(QPoint(c0, 0), QPoint(c1, int(s->matrix->rows()) - 1));
}

void PipelineView::highlightCell(Kind kind, int row, int col)
{
    PipelineStage *s = stage(kind);
    if (s && s->matrix && row < s->matrix->rows() && col < s->matrix->cols())
        s->overlay->cell = QRect(col, row, 1, 1);
}

bool PipelineView::explainCell(int i, int row, int col)
{
    if (i < 0 || i >= m_stages.size() || !m_shown || !m_shown->hasResult())
        return false;
    const PipelineStage &st = *m_stages[i];
    if (!st.matrix || row < 0 || col < 0 || row >= st.matrix->rows() || col >= st.matrix->cols())
        return false;
    clearHighlights();
    m_focus = -1; // a click: the view no longer keeps a lesson's stage in view
    const Kind k = st.kind;
    const int h = shownHead(), dh = m_shown->attention(m_layer).dHead;
    const bool cross = m_shown->cross;
    highlightCell(k, row, col);
    switch (k) {
    case Kind::Input:
        highlightRows(Kind::Q, row, row);
        if (!cross) {
            highlightRows(Kind::K, row, row);
            highlightRows(Kind::V, row, row);
        }
        break;
    case Kind::KeyInput:
        highlightRows(Kind::K, row, row);
        highlightRows(Kind::V, row, row);
        break;
    case Kind::Q:
        highlightRows(Kind::Input, row, row);
        highlightRows(Kind::QRotated, row, row);
        highlightRows(Kind::RawScores, row, row);
        break;
    case Kind::K:
        highlightRows(cross ? Kind::KeyInput : Kind::Input, row, row);
        highlightRows(Kind::KRotated, row, row);
        highlightCols(Kind::RawScores, row, row);
        break;
    case Kind::QRotated:
        highlightRows(Kind::Q, row, row);
        highlightRows(Kind::RawScores, row, row);
        break;
    case Kind::KRotated:
        highlightRows(Kind::K, row, row);
        highlightCols(Kind::RawScores, row, row);
        break;
    case Kind::V:
        highlightRows(cross ? Kind::KeyInput : Kind::Input, row, row);
        highlightCols(Kind::Context, col, col);
        break;
    case Kind::RawScores:
    case Kind::Scaled:
    case Kind::Masked:
    case Kind::Weights:
        highlightRows(Kind::Q, row, row);
        highlightRows(Kind::K, col, col);
        highlightRows(Kind::QRotated, row, row);
        highlightRows(Kind::KRotated, col, col);
        for (Kind o : {Kind::RawScores, Kind::Scaled, Kind::Masked, Kind::Weights})
            highlightCell(o, row, col);
        if (k == Kind::Weights)
            highlightRows(Kind::Context, row, row);
        break;
    case Kind::Context:
        highlightRows(Kind::Weights, row, row);
        highlightCols(Kind::V, col, col);
        highlightCell(Kind::Concat, row, h * dh + col);
        break;
    case Kind::Concat:
        if (col / std::max(1, dh) == h)
            highlightCell(Kind::Context, row, col - h * dh);
        highlightRows(Kind::Output, row, row);
        break;
    case Kind::Output: highlightRows(Kind::Concat, row, row); break;
    }
    m_explain->setHtml(explainText(k, row, col));
    for (PipelineStage *s : m_stages)
        s->plot->replot(QCustomPlot::rpQueuedReplot);
    return true;
}

QString PipelineView::explainText(Kind kind, int i, int j) const
{
    const ComputeSnapshot &s = *m_shown;
    const SequenceResult<float> &r = s.seq(m_layer);
    const ComputeSettings c = effectiveSettings(s);
    const int h = shownHead(), dh = s.attention(m_layer).dHead, H = s.attention(m_layer).numHeads;
    const QString qTok = esc(m_queryLabels.value(i)), kTok = esc(m_keyLabels.value(j));
    const QString head = H > 1 ? QStringLiteral(", head %1").arg(h) : QString();
    const bool masked = r.mask.size() && i < r.mask.rows() && j < r.mask.cols() && r.mask(i, j);
    QString out;
    auto line = [&out](const QString &t) { out += QStringLiteral("<p>") + t + QStringLiteral("</p>"); };
    auto mono = [&out](const QString &t) {
        out += QStringLiteral("<p style=\"font-family: '%1', monospace\">").arg(explanationMono().family()) + t
            + QStringLiteral("</p>");
    };
    const auto qh = r.q.middleCols(h * dh, dh);
    const auto kh = r.k.middleCols(h * dh, dh);
    const auto vh = r.v.middleCols(h * dh, dh);
    auto dot = [&](int qi, int kj) {
        double sum = 0;
        for (int d = 0; d < dh; ++d)
            sum += double(qh(qi, d)) * double(kh(kj, d));
        return sum;
    };
    auto dotTerms = [&](int qi, int kj) {
        return termList(dh, [&](int d) { return QStringLiteral("%1×%2").arg(num(qh(qi, d)), num(kh(kj, d))); });
    };
    auto scaleText = [&] {
        switch (c.scaleRule) {
        case ScaleRule::InvSqrtDHead: return QStringLiteral("1/√%1 = %2").arg(dh).arg(num(s.attention(m_layer).scale));
        case ScaleRule::InvSqrtDModel: return QStringLiteral("1/√%1 = %2").arg(s.attention(m_layer).dModel).arg(num(s.attention(m_layer).scale));
        case ScaleRule::None: return QStringLiteral("1 (no scaling)");
        case ScaleRule::Temperature:
            return QStringLiteral("1/(%1·√%2) = %3").arg(c.temperature, 0, 'g', 3).arg(dh).arg(num(s.attention(m_layer).scale));
        case ScaleRule::Explicit: return num(s.attention(m_layer).scale);
        }
        return QString();
    };
    auto maskReason = [&](int qi, int kj) {
        QStringList why;
        if ((c.mask == MaskChoice::Causal || c.mask == MaskChoice::CausalPadding) && kj > qi)
            why << QStringLiteral("causal: key %1 comes after query %2").arg(kj).arg(qi);
        if ((c.mask == MaskChoice::Padding || c.mask == MaskChoice::CausalPadding) && s.paddedKeys.count(kj))
            why << QStringLiteral("key %1 is padding").arg(kj);
        if (c.mask == MaskChoice::Custom && s.customMask.count({qi, kj}))
            why << QStringLiteral("masked by hand");
        return why.isEmpty() ? QStringLiteral("masked") : why.join(QStringLiteral("; "));
    };
    auto project = [&](const char *letter, const Mat<float> &x, const Mat<float> &result, const Linear<float> *lin) {
        const int g = h * dh + j;
        const QString L = QString::fromLatin1(letter);
        line(QStringLiteral("<b>%1[%2, %3]%4</b> = %5").arg(L).arg(i).arg(j).arg(head, num(result(i, g))));
        if (s.fromModel() && s.layer(m_layer).projections) {
            // Grouped-query attention: K and V come from the head's key/value head; rotary models
            // show the projection before q/k norm and rotation.
            const AttentionResult<float> &att = s.attention(m_layer);
            const int kv = att.kvHeadOf(h);
            const int gw = letter[0] == 'Q' ? g : kv * dh + j;
            if (letter[0] != 'Q' && att.kvHeads > 0 && att.kvHeads < att.numHeads)
                line(QStringLiteral("Head %1 reads key/value head %2, which heads %3–%4 share.")
                         .arg(h)
                         .arg(kv)
                         .arg(kv * (att.numHeads / att.kvHeads))
                         .arg((kv + 1) * (att.numHeads / att.kvHeads) - 1));
            const Mat<float> &turned = letter[0] == 'Q' ? r.q : r.k;
            if (letter[0] != 'V' && r.qPre.size() && i < turned.rows() && g < turned.cols())
                line(QStringLiteral("After %1 (the next stages) it is %2.").arg(turnWords(s)).arg(num(turned(i, g))));
            const Linear<float> &W = letter[0] == 'Q' ? s.layer(m_layer).projections->q
                : letter[0] == 'K'                    ? s.layer(m_layer).projections->k
                                                      : s.layer(m_layer).projections->v;
            const Mat<float> &xin = s.layer(m_layer).attentionIn;
            line(QStringLiteral("x_%1 = %2 (row %1, %3 numbers); %4[%1, %5] = x_%1 · row %6 of W_%7 + b_%7[%6]:")
                     .arg(i)
                     .arg(preNorm(s) ? normName(s) + QStringLiteral(" of the residual stream") : QStringLiteral("the residual stream"))
                     .arg(xin.cols())
                     .arg(L)
                     .arg(g)
                     .arg(gw)
                     .arg(L.toLower()));
            double sum = 0;
            for (int k = 0; k < xin.cols(); ++k)
                sum += double(xin(i, k)) * double(W.W(gw, k));
            mono(termList(int(xin.cols()), [&](int k) { return QStringLiteral("%1×%2").arg(num(xin(i, k)), num(W.W(gw, k))); })
                 + QStringLiteral(" = ") + num(sum));
            if (W.hasBias())
                mono(QStringLiteral("+ b_%1[%2] = %3 + %4 = <b>%5</b>").arg(L.toLower()).arg(gw).arg(num(sum), num(W.b(gw)), num(sum + W.b(gw))));
            return;
        }
        if (s.deep()) {
            line(QStringLiteral("Stack layer %1: computed from the layer-normalized residual stream with the layer's "
                                "W_%2; this view does not expand stack layers' projections.")
                     .arg(s.layerIndex(m_layer))
                     .arg(L.toLower()));
            return;
        }
        if (!lin || lin->isIdentity()) {
            line(QStringLiteral("Identity projection: %1 = X, so this is column %2 of row %3 of X: %4.")
                     .arg(L)
                     .arg(g)
                     .arg(i)
                     .arg(num(x(i, g))));
            return;
        }
        double sum = 0;
        for (int k = 0; k < x.cols(); ++k)
            sum += double(x(i, k)) * double(lin->W(g, k));
        line(QStringLiteral("x_%1 · (row %2 of W_%3) = Σ_k x_%1,k · W_%3[%2, k]:").arg(i).arg(g).arg(L.toLower()));
        mono(termList(int(x.cols()), [&](int k) { return QStringLiteral("%1×%2").arg(num(x(i, k)), num(lin->W(g, k))); })
             + QStringLiteral(" = ") + num(sum));
        if (lin->hasBias())
            mono(QStringLiteral("+ b_%1[%2] = %3 + %4 = %5")
                     .arg(L.toLower())
                     .arg(g)
                     .arg(num(sum), num(lin->b(g)), num(sum + lin->b(g))));
    };

    switch (kind) {
    case Kind::Input:
    case Kind::KeyInput: {
        const bool key = kind == Kind::KeyInput;
        const Mat<float> &x = key ? s.keyInput(m_layer) : s.queryInput(m_layer);
        const QString tok = esc(key ? m_keyLabels.value(i) : m_queryLabels.value(i));
        line(QStringLiteral("<b>%1[%2, %3]</b> = %4").arg(key ? QStringLiteral("X_kv") : QStringLiteral("X")).arg(i).arg(j).arg(num(x(i, j))));
        if (s.deep())
            line(QStringLiteral("Component %1 of token %2 “%3” in the residual stream entering layer %4.").arg(j).arg(i).arg(tok).arg(s.layerIndex(m_layer)));
        else if (const std::vector<uint8_t> &u = key ? s.keyUnknown : s.queryUnknown; size_t(i) < u.size() && u[size_t(i)])
            line(QStringLiteral("Token %1 “%2” is not in the table %3: component %4 of its deterministic stand-in vector.")
                     .arg(i).arg(tok, esc(s.tableName)).arg(j));
        else
            line(QStringLiteral("Component %1 of the word vector of token %2 “%3” (table %4).").arg(j).arg(i).arg(tok, esc(s.tableName)));
        break;
    }
    case Kind::Q:
        project("Q", s.queryInput(m_layer), r.qPre.size() ? r.qPre : r.q, s.projections(m_layer) ? &s.projections(m_layer)->q : nullptr);
        break;
    case Kind::K:
        project("K", s.keyInput(m_layer), r.kPre.size() ? r.kPre : r.k, s.projections(m_layer) ? &s.projections(m_layer)->k : nullptr);
        break;
    case Kind::QRotated:
    case Kind::KRotated: {
        // rotate_half: dimension j < dims / 2 pairs with j + dims / 2, turned by i · θ_(j mod dims / 2)
        const bool q = kind == Kind::QRotated;
        const Mat<float> &pre = q ? r.qPre : r.kPre, &post = q ? r.q : r.k;
        const int g = h * dh + j;
        const QString L = q ? QStringLiteral("Q") : QStringLiteral("K");
        line(QStringLiteral("<b>%1 rotated[%2, %3]%4</b> = %5").arg(L).arg(i).arg(j).arg(head, num(post(i, g))));
        const Architecture &arch = s.modelInfo.architecture;
        const Rope &rope = arch.ropeOf(s.layerIndex(m_layer));
        const int half = rope.dims / 2;
        if (arch.qkNorm) {
            line(QStringLiteral("As projected it was %1; %2 first normalizes the head's %3 numbers, then turns them.")
                     .arg(num(pre(i, g)))
                     .arg(turnWords(s))
                     .arg(dh));
        } else if (arch.positions == PositionKind::Rotary && j < rope.dims && half > 0) {
            const RopeTable table = ropeTable(rope, int(post.rows()));
            const int k = j % half, partner = j < half ? j + half : j - half;
            const double angle = double(i) * table.invFreq[size_t(k)];
            const double a = pre(i, g), b = pre(i, h * dh + partner);
            line(QStringLiteral("Token %1 turns the pair of dimensions (%2, %3) by %1 × θ_%4 = %1 × %5 = %6 rad:")
                     .arg(i).arg(std::min(j, partner)).arg(std::max(j, partner)).arg(k).arg(num(table.invFreq[size_t(k)])).arg(num(angle)));
            const double c = std::cos(angle) * table.attentionScaling, sn = std::sin(angle) * table.attentionScaling;
            mono(j < half ? QStringLiteral("%1 × cos − %2 × sin = %1 × %3 − %2 × %4 = %5")
                                .arg(num(a), num(b), num(c), num(sn), num(a * c - b * sn))
                          : QStringLiteral("%1 × cos + %2 × sin = %1 × %3 + %2 × %4 = %5")
                                .arg(num(a), num(b), num(c), num(sn), num(a * c + b * sn)));
        } else {
            line(QStringLiteral("Dimension %1 is beyond the %2 rotated ones: unchanged, %3.").arg(j).arg(rope.dims).arg(num(pre(i, g))));
        }
        break;
    }
    case Kind::V: project("V", s.keyInput(m_layer), r.v, s.projections(m_layer) ? &s.projections(m_layer)->v : nullptr); break;
    case Kind::RawScores:
    case Kind::Scaled:
    case Kind::Masked: {
        const double raw = dot(i, j);
        const double scaled = raw * s.attention(m_layer).scale;
        line(QStringLiteral("<b>%1[%2, %3]</b>: query %2 “%4” · key %3 “%5”%6")
                 .arg(kind == Kind::RawScores ? QStringLiteral("S") : kind == Kind::Scaled ? QStringLiteral("S'") : QStringLiteral("S'_m"))
                 .arg(i)
                 .arg(j)
                 .arg(qTok, kTok, head));
        line(QStringLiteral("S = q_%1 · k_%2 = Σ_c q_%1,c · k_%2,c:").arg(i).arg(j));
        mono(dotTerms(i, j) + QStringLiteral(" = <b>") + num(raw) + QStringLiteral("</b>"));
        if (kind != Kind::RawScores) {
            line(QStringLiteral("Scaled: S' = S × %1:").arg(scaleText()));
            mono(QStringLiteral("%1 × %2 = <b>%3</b>").arg(num(raw), num(s.attention(m_layer).scale), num(scaled)));
        }
        if (kind == Kind::Masked) {
            if (!masked)
                line(QStringLiteral("Not masked: S'_m = S' = %1.").arg(num(scaled)));
            else if (c.normalization == Normalization::Softmax && c.maskMethod == MaskMethod::NegInf)
                line(QStringLiteral("<b>Masked</b> (%1): S'_m = −∞, so exp gives 0 and the weight is 0.").arg(maskReason(i, j)));
            else if (c.normalization == Normalization::Softmax)
                line(QStringLiteral("<b>Masked</b> (%1): kept here; the softmax runs over every key, then this "
                                    "key's probability is multiplied by 0 and the row renormalized.")
                         .arg(maskReason(i, j)));
            else
                line(QStringLiteral("<b>Masked</b> (%1): S'_m = 0, and the key is left out of the row's sum.").arg(maskReason(i, j)));
        }
        break;
    }
    case Kind::Weights: {
        const Mat<float> &w = s.weights(m_layer, h);
        const int tk = int(w.cols());
        line(QStringLiteral("<b>A[%1, %2]</b> = %3: how much query %1 “%4” attends to key %2 “%5”%6")
                 .arg(i).arg(j).arg(num(w(i, j))).arg(qTok, kTok, head));
        const bool fully = std::find(r.fullyMaskedRows.begin(), r.fullyMaskedRows.end(), i) != r.fullyMaskedRows.end();
        if (fully) {
            line(QStringLiteral("Every key of query %1 is masked: no weights exist. The policy (as PyTorch) makes "
                                "the whole row NaN, and so its context and output rows.")
                     .arg(i));
            break;
        }
        std::vector<double> sc(static_cast<size_t>(tk));
        for (int k = 0; k < tk; ++k)
            sc[size_t(k)] = dot(i, k) * s.attention(m_layer).scale;
        auto isMasked = [&](int k) { return r.mask.size() && r.mask(i, k); };
        if (masked && !(c.normalization == Normalization::Softmax && c.maskMethod == MaskMethod::MultiplyRenormalize))
            line(QStringLiteral("<b>Masked</b> (%1): weight 0.").arg(maskReason(i, j)));
        if (c.normalization == Normalization::Cosine) {
            double qn = 0, kn = 0;
            for (int d = 0; d < dh; ++d) {
                qn += double(qh(i, d)) * qh(i, d);
                kn += double(kh(j, d)) * kh(j, d);
            }
            qn = std::sqrt(qn);
            kn = std::sqrt(kn);
            if (!masked) {
                line(QStringLiteral("Cosine: A = (q_%1 · k_%2) / (|q_%1| |k_%2|):").arg(i).arg(j));
                mono(QStringLiteral("%1 / (%2 × %3) = <b>%4</b>").arg(num(dot(i, j)), num(qn), num(kn), num(qn * kn > 0 ? dot(i, j) / (qn * kn) : 0)));
            }
        } else if (c.normalization == Normalization::Sum) {
            double sum = 0;
            for (int k = 0; k < tk; ++k)
                if (!isMasked(k))
                    sum += sc[size_t(k)];
            line(QStringLiteral("Row %1's scaled scores (masked → 0, left out):").arg(i));
            mono(termList(tk, [&](int k) { return isMasked(k) ? QStringLiteral("(masked)") : num(sc[size_t(k)]); })
                 + QStringLiteral(" = ") + num(sum));
            if (!masked)
                mono(QStringLiteral("A = S'_%1,%2 / row sum = %3 / %4 = <b>%5</b>").arg(i).arg(j).arg(num(sc[size_t(j)]), num(sum), num(sc[size_t(j)] / sum)));
        } else {
            const bool renorm = c.maskMethod == MaskMethod::MultiplyRenormalize && r.mask.size();
            double mx = -std::numeric_limits<double>::infinity();
            for (int k = 0; k < tk; ++k)
                if (renorm || !isMasked(k))
                    mx = std::max(mx, sc[size_t(k)]);
            std::vector<double> e(static_cast<size_t>(tk));
            double z = 0;
            for (int k = 0; k < tk; ++k) {
                e[size_t(k)] = renorm || !isMasked(k) ? std::exp(sc[size_t(k)] - mx) : 0.0;
                z += e[size_t(k)];
            }
            line(QStringLiteral("Row %1's scaled scores S'%2:").arg(i).arg(renorm ? QString() : QStringLiteral("_m")));
            mono(termList(tk, [&](int k) { return !renorm && isMasked(k) ? QStringLiteral("−∞") : num(sc[size_t(k)]); }).replace(QStringLiteral(" + "), QStringLiteral(", ")));
            line(QStringLiteral("Softmax, stable form: subtract the row max m = %1, exponentiate:").arg(num(mx)));
            mono(termList(tk, [&](int k) { return num(e[size_t(k)]); }) + QStringLiteral(" = Z = ") + num(z));
            if (!renorm) {
                if (!masked)
                    mono(QStringLiteral("A = exp(S'_%1,%2 − m) / Z = %3 / %4 = <b>%5</b>").arg(i).arg(j).arg(num(e[size_t(j)]), num(z), num(e[size_t(j)] / z)));
            } else {
                double kept = 0;
                for (int k = 0; k < tk; ++k)
                    if (!isMasked(k))
                        kept += e[size_t(k)] / z;
                line(QStringLiteral("Multiply-renormalize: p = exp/Z; masked keys × 0; the kept p sum to %1.").arg(num(kept)));
                if (masked)
                    line(QStringLiteral("<b>Masked</b> (%1): p × 0 = weight 0.").arg(maskReason(i, j)));
                else
                    mono(QStringLiteral("A = p / %1 = %2 / %1 = <b>%3</b>").arg(num(kept), num(e[size_t(j)] / z), num(e[size_t(j)] / z / kept)));
            }
        }
        // the whole row as drawn (and as the lessons quote it): cells too small for four decimals,
        // or for any number at 18 px in presentation mode, show it here (issue 14)
        mono(QStringLiteral("A[%1, :] = ").arg(i)
             + termList(tk, [&](int k) { return num(w(i, k)); }).replace(QStringLiteral(" + "), QStringLiteral(", ")));
        if (c.dropout > 0 && size_t(h) < r.weightsPreDropout.size()) {
            const float pre = r.weightsPreDropout[size_t(h)](i, j);
            const bool dropped = w(i, j) == 0.0f && pre != 0.0f;
            line(dropped ? QStringLiteral("Dropout (p = %1): this weight was <b>dropped</b> → 0 (it was %2).").arg(c.dropout, 0, 'g', 3).arg(num(pre))
                         : QStringLiteral("Dropout (p = %1): kept, × 1/(1−p): %2 × %3 = <b>%4</b>.")
                               .arg(c.dropout, 0, 'g', 3)
                               .arg(num(pre), num(1.0 / (1.0 - c.dropout)), num(w(i, j))));
        }
        if (dh <= 16) { // what the row becomes: its context, the values mixed by these weights
            QStringList ctx;
            for (int d = 0; d < dh; ++d)
                ctx << num(r.context(i, h * dh + d));
            line(QStringLiteral("Row %1's weights mix the rows of V into its context C%2[%1] = [%3].")
                     .arg(i)
                     .arg(H > 1 ? QStringLiteral("_%1").arg(h) : QString(), ctx.join(QStringLiteral(", "))));
        }
        break;
    }
    case Kind::Context: {
        const Mat<float> &w = s.weights(m_layer, h);
        const int tk = int(w.cols());
        double sum = 0;
        for (int k = 0; k < tk; ++k)
            sum += double(w(i, k)) * double(vh(k, j));
        line(QStringLiteral("<b>C[%1, %2]</b>%3 = %4: query %1 “%5”, value column %2")
                 .arg(i).arg(j).arg(head, num(r.context(i, h * dh + j))).arg(qTok));
        line(QStringLiteral("Σ_j A_%1,j · V_j,%2 (weights of row %1 × column %2 of V):").arg(i).arg(j));
        mono(termList(tk, [&](int k) { return QStringLiteral("%1×%2").arg(num(w(i, k)), num(vh(k, j))); }) + QStringLiteral(" = <b>")
             + num(sum) + QStringLiteral("</b>"));
        break;
    }
    case Kind::Concat: {
        const int hh = j / std::max(1, dh);
        line(QStringLiteral("<b>concat[%1, %2]</b> = %3").arg(i).arg(j).arg(num(r.context(i, j))));
        line(QStringLiteral("Column %1 is column %2 of head %3's context C_%3 (row %4 “%5”).%6")
                 .arg(j).arg(j - hh * dh).arg(hh).arg(i).arg(qTok)
                 .arg(hh == h ? QStringLiteral(" That is the context stage shown here.") : QString()));
        break;
    }
    case Kind::Output: {
        line(QStringLiteral("<b>O[%1, %2]</b> = %3: output of query %1 “%4”").arg(i).arg(j).arg(num(r.output(i, j))).arg(qTok));
        if (s.deep()) {
            line(QStringLiteral("Stack layer %1: concat row %2 · row %3 of the layer's W_o + b_o (not expanded here).").arg(s.layerIndex(m_layer)).arg(i).arg(j));
            break;
        }
        const Linear<float> *o = s.projections(m_layer) ? &s.projections(m_layer)->o : nullptr;
        if (!o || o->isIdentity()) {
            line(QStringLiteral("No W_o (identity): output = concatenation, so O[%1, %2] = concat[%1, %2] = %3.")
                     .arg(i).arg(j).arg(num(r.context(i, j))));
            break;
        }
        double sum = 0;
        for (int k = 0; k < r.context.cols(); ++k)
            sum += double(r.context(i, k)) * double(o->W(j, k));
        line(QStringLiteral("concat row %1 · row %2 of W_o:").arg(i).arg(j));
        mono(termList(int(r.context.cols()), [&](int k) { return QStringLiteral("%1×%2").arg(num(r.context(i, k)), num(o->W(j, k))); })
             + QStringLiteral(" = ") + num(sum));
        if (o->hasBias())
            mono(QStringLiteral("+ b_o[%1] = %2 + %3 = <b>%4</b>").arg(j).arg(num(sum), num(o->b(j)), num(sum + o->b(j))));
        break;
    }
    }
    return out;
}

} // namespace attnviz::ui
