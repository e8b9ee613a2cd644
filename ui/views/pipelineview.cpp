// SPDX-License-Identifier: GPL-3.0-or-later
// The pipeline widget: the step bar, one card per stage (heatmap, formula, caption) in as many
// columns as fit, the explanation beside them, stepping and clicks. What each stage holds and how a
// click is explained is the stage table's (pipelinestages.cpp).
#include "views/pipelineview.h"
#include "views/plotfit.h"
#include "views/pipelinestages.h"

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

constexpr int kMaxHatchCells = 256 * 256;
constexpr int kBoxWidth = 320;
constexpr int kPlotHeight = 280;

QStringList indexLabels(Eigen::Index n)
{
    QStringList l;
    for (Eigen::Index k = 0; k < n; ++k)
        l << QString::number(k);
    return l;
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
        // explanations quote them, where "−0.0000" fits in a font as large.
        // no room kept for a minus sign where no entry has one (the weights): at 18 px the weights'
        // six columns drew no numbers at 1920 × 1080 while the scores beside them did
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
                    return !std::isfinite(v) ? stageNumber(v)
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
class PipelineStage : public QFrame, public StageContent {
public:
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
    QStringList rowLabels, colLabels;
    bool revealed = true;

    PipelineStage(Kind k, QWidget *parent)
        : QFrame(parent)
    {
        kind = k;
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
        replotOnlyWhenShown(plot); // a stage not yet revealed does not replot as the cards lay out
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
        // at the top, right under the stage's name: centred in a plot's height it lay below the
        // screen's edge when presenting, and the stage's name stood over an empty space
        hiddenLabel->setAlignment(Qt::AlignHCenter | Qt::AlignTop);
        hiddenLabel->setMargin(8);
        // colours by palette role, not a style sheet: a sheet's palette() is read once, and kept the
        // light theme's white block in high contrast
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

        relabelAfterLayout(plot, plot, [this] {
            const bool x = labelTokenAxis(plot->xAxis, colLabels, 10);
            const bool y = labelTokenAxis(plot->yAxis, rowLabels, 10);
            // a title too wide for the card breaks between formula and shape, then at spaces, never cut
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
            return x || y || t;
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
    m_headNote->setWordWrap(true); // a long note wraps; it never sets the window's minimum width
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

const Mat<float> *PipelineView::stageMatrix(int i) const
{
    return i >= 0 && i < m_stages.size() && m_stages[i]->message.isEmpty() ? m_stages[i]->matrix : nullptr;
}

QStringList PipelineView::stageRowLabels(int i) const
{
    const Mat<float> *m = stageMatrix(i);
    if (!m)
        return {};
    QStringList rows = m_stages[i]->rows ? *m_stages[i]->rows : QStringList();
    for (qsizetype r = rows.size(); r < m->rows(); ++r)
        rows << QString::number(r);
    return rows.mid(0, m->rows());
}

QStringList PipelineView::stageColumnLabels(int i) const
{
    const Mat<float> *m = stageMatrix(i);
    if (!m)
        return {};
    QStringList cols;
    const PipelineStage *st = m_stages[i];
    const bool mlp = st->kind == StageKind::MlpGate || st->kind == StageKind::MlpActivated || st->kind == StageKind::MlpUp ||
                     st->kind == StageKind::MlpProduct;
    if (st->cols)
        cols = *st->cols;
    else
        for (Eigen::Index c = 0; c < m->cols(); ++c)
            cols << (mlp && size_t(c) < m_neurons.size() ? QStringLiteral("n%1").arg(m_neurons[size_t(c)]) : QStringLiteral("d%1").arg(c));
    for (qsizetype c = cols.size(); c < m->cols(); ++c)
        cols << QString::number(c);
    return cols.mid(0, m->cols());
}

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
    const QVector<Kind> kinds = applicableStages(m_shown.get(), m_layer);
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
        s->installEventFilter(this); // a lesson's stage kept in view as the cards around it settle
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
    // plots grow with the cards up to most of the viewport's height
    const int spacing = m_grid->spacing();
    const int avail = m_scroll->viewport()->width() - 8 - m_scroll->verticalScrollBar()->sizeHint().width();
    // cards grow with the text (presentation mode): a stage of tiny cells under large labels reads
    // worse than fewer, larger stages
    int box = presentationLegibility() ? std::max(kBoxWidth, fontMetrics().averageCharWidth() * 40) : kBoxWidth;
    const int highest = std::max(kPlotHeight, int(m_scroll->viewport()->height() * 0.7));
    int least = kPlotHeight;
    if (presentationLegibility()) {
        // and wide and high enough for the numbers of the stages that can hold them (at most 64 × 64
        // cells, as StageOverlay draws) at the 18 px minimum, where the screen allows: 4 columns of
        // "−0.00" did not fit cards sized by the text alone (at 1920 × 1080 the Output stage of the
        // two-head preset drew none). What is not the cells (labels, colour scale, title) is
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
    // the focused stage moved or changed size after it was brought into view (the cards above it
    // took their sizes, the docks beside the view folded): brought into view again, unless stepping
    // shows another stage (each step scrolls to its own)
    if ((e->type() == QEvent::Move || e->type() == QEvent::Resize) && m_focus >= 0 && m_focus < m_stages.size()
        && (m_current < 0 || m_current == m_focus) && (o == m_stages[m_focus] || o == m_stages[m_focus]->plot))
        keepFocusInView();
    // in presentation mode the explanation holds a line of three numbers in its own (1.6×) text:
    // narrower, its lines wrapped until the context row at its end needed scrolling on a 1280 × 720
    // screen; in the window it keeps its 220 px
    if (o == m_explain && e->type() == QEvent::FontChange) {
        QFont mono = explanationMono();
        mono.setPixelSize(QFontInfo(m_explain->font()).pixelSize());
        const int line = QFontMetrics(mono).horizontalAdvance(QStringLiteral("−0.0000, −0.0000, −0.0000,"));
        const int chrome = 2 * m_explain->frameWidth() + 2 * int(m_explain->document()->documentMargin())
            + m_explain->verticalScrollBar()->sizeHint().width();
        m_explain->setMinimumWidth(presentationLegibility() ? std::max(220, line + chrome) : 220);
    }
    // the wheel over a stage scrolls the stages (the plots do not zoom)
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
    m_bias.resize(0, 0);
    m_scoresDerived = false;
    m_neurons.clear();
    m_neuronLabels.clear();
    const SnapshotPtr &s = m_shown;
    const bool ok = s && s->hasResult();
    if (ok) {
        m_queryLabels = s->queryLabels;
        m_keyLabels = s->keyLabels;
        // the gated MLP's stages: the same neurons in all four, the most active over the text
        m_neurons = strongestNeurons(*s, m_layer, kMaxShownNeurons);
        for (int n : m_neurons)
            m_neuronLabels << QString::number(n);
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
            // T5 (encoder, decoder self-attention): the scores it softmaxes are the scaled q·k plus
            // the learned relative position bias, which only the kept scores hold
            if (applicableStages(s.get(), m_layer).contains(StageKind::PositionBias) && int(r.scores.size()) > h
                && r.scores[size_t(h)].rows() == m_scaled.rows() && r.scores[size_t(h)].cols() == m_scaled.cols()) {
                m_masked = r.scores[size_t(h)];
                m_bias = m_masked - m_scaled;
            }
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
        if (s->isWindow()) // a long text's window: which positions, and what its weights are
            m_headNote->setText(tr("Positions %L1–%L2 of %L3 around the selected query: each row's weights on "
                                   "these keys only (the keys before them hold the rest of the row's 1); Q, K, V, "
                                   "the context and the output are the whole text's.")
                                    .arg(s->windowFirst)
                                    .arg(s->windowFirst + s->tq() - 1)
                                    .arg(s->windowOf)
                                + (m_headNote->text().isEmpty() ? QString() : QStringLiteral("\n") + m_headNote->text()));
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

StageContext PipelineView::context() const
{
    StageContext cx;
    cx.snapshot = m_shown.get();
    cx.layer = m_layer;
    cx.head = shownHead();
    cx.scale = m_scale;
    cx.raw = &m_raw;
    cx.scaled = &m_scaled;
    cx.masked = &m_masked;
    cx.bias = &m_bias;
    cx.scoresDerived = m_scoresDerived;
    cx.queryLabels = &m_queryLabels;
    cx.keyLabels = &m_keyLabels;
    cx.neurons = &m_neurons;
    cx.neuronLabels = &m_neuronLabels;
    cx.monoFamily = explanationMono().family();
    return cx;
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
    const bool model = ok && s->fromModel();
    st.rows = &m_queryLabels;
    st.cols = nullptr;
    st.xAxis = tr("dimension");
    st.yAxis = tr("query");
    st.hatch = false;
    st.signedScale = true;
    fillStageContent(context(), st);

    const bool dimStage = !st.cols; // columns are dimensions, not keys
    if (model && dimStage && st.matrix && st.matrix->cols() > kMaxShownDims) {
        // wide vectors (64-d heads, 768-d streams): the first columns at a readable size, and a
        // marker that says how many there are, rather than unreadable slivers
        const Eigen::Index all = st.matrix->cols();
        Mat<float> left = st.matrix->leftCols(kMaxShownDims);
        st.owned = std::move(left);
        st.matrix = &st.owned;
        st.xAxis = tr("dim 0–%1 … %2 dims").arg(kMaxShownDims - 1).arg(all);
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
    st.titleElement->setProperty(kFullTitleProperty, st.title); // an export fits the whole title to its width
    st.shownTitle = st.title;
    st.plot->xAxis->setLabel(st.xAxis);
    st.plot->yAxis->setLabel(st.yAxis);
    // the MLP stages' columns are named by their neuron's index, which is not their position
    st.plot->xAxis->setProperty("attnvizLabelsAreIds", st.cols == &m_neuronLabels);
    // a long text's window of positions: its tokens numbered as the text's
    const int first = s && s->isWindow() ? s->windowFirst : 0;
    st.plot->yAxis->setProperty("attnvizPositionOffset", first);
    st.plot->xAxis->setProperty("attnvizPositionOffset", st.cols == &m_keyLabels ? first : 0);

    if (st.matrix && st.matrix->size() > 0 && st.message.isEmpty()) {
        const Mat<float> &m = *st.matrix;
        st.rowLabels = *st.rows;
        if (st.cols)
            st.colLabels = *st.cols;
        else
            st.colLabels = indexLabels(m.cols());
        const BoolMat *mask = st.hatch && s->seq(m_layer).mask.size() ? &s->seq(m_layer).mask : nullptr;
        // masked scores are −∞ (or 0) by construction: hatched, and left out of the colour range
        const bool excludeMasked = st.kind == Kind::Masked && mask;
        int pool = 1;
        st.map->setData(colorMapData(m, excludeMasked ? mask : nullptr, kMaxDisplayCells, &pool), false);
        st.map->data()->recalculateDataBounds();
        const QCPRange b = st.map->data()->dataBounds();
        double lo = std::isfinite(b.lower) ? b.lower : 0, hi = std::isfinite(b.upper) ? b.upper : 1;
        if (!st.signedScale && lo >= 0) {
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
    if (v >= 0 && v != m_explained)
        introduceStage(v); // the panel speaks of the stage stepped to, not of a cell of another
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

void PipelineView::introduceStage(int i)
{
    const PipelineStage &st = *m_stages[i];
    clearHighlights();
    m_explained = i;
    m_explain->setHtml(tr("<p><b>%1. %2</b></p><p>%3</p><p>Click a cell of this stage to see how it was computed.</p>")
                           .arg(i + 1)
                           .arg(st.name.toHtmlEscaped(), st.caption.toHtmlEscaped()));
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
        if (m_focus < 0 || m_focus >= m_stages.size())
            return;
        m_gridHost->layout()->activate();
        PipelineStage *st = m_stages[m_focus];
        if (st->height() + 8 <= m_scroll->viewport()->height() || m_focusRow < 0) {
            m_scroll->ensureWidgetVisible(st, 4, 4);
            return;
        }
        // A stage taller than the view: ensureWidgetVisible would centre the stage, which leaves the
        // cell off screen when it lies near the stage's top or bottom; the cell itself is brought
        // into view instead, with room around it. Its place is read from the plot's layout, laid
        // out now where the plot was resized since its last replot.
        QCustomPlot *plot = st->plot;
        if (plot->plotLayout()->outerRect() != plot->viewport())
            plot->replot(QCustomPlot::rpImmediateRefresh);
        const QPoint cell = plot->mapTo(m_scroll->widget(), cellCenter(m_focus, m_focusRow, std::max(0, m_focusCol)));
        const QSize view = m_scroll->viewport()->size();
        m_scroll->ensureVisible(cell.x(), cell.y(), std::min(80, view.width() / 3), std::min(80, view.height() / 3));
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
    // the outlines the stage table asks for, in the stages this configuration has
    struct Marks : StageMarks {
        PipelineView *view;
        explicit Marks(PipelineView *v) : view(v) {}
        void rows(Kind kind, int r0, int r1) override { view->highlightRows(kind, r0, r1); }
        void cols(Kind kind, int c0, int c1) override { view->highlightCols(kind, c0, c1); }
        void cell(Kind kind, int row, int col) override { view->highlightCell(kind, row, col); }
    } marks(this);
    const StageContext cx = context();
    markRelated(cx, st.kind, row, col, marks);
    m_explain->setHtml(explainStageCell(cx, st.kind, row, col));
    m_explained = i;
    for (PipelineStage *s : m_stages)
        s->plot->replot(QCustomPlot::rpQueuedReplot);
    return true;
}

} // namespace attnviz::ui
