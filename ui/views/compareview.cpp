// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/compareview.h"

#include "views/comparepredictions.h"

#include "style/appearance.h"
#include "style/cellpaint.h"

#include "controls/controlpanel.h"
#include "controls/elidedlabel.h"
#include "live/fallbackbackend.h"
#include "controls/formwidgets.h"
#include "files/messagetext.h"
#include "live/livecompute.h"
#include "live/livesession.h"
#include "live/longtext.h"
#include "live/longtextmaps.h"
#include "style/legibility.h"
#include "style/plotstyle.h"
#include "views/plotfit.h"
#include "views/mapregion.h"
#include "views/plotzoom.h"

#include "bundledvectors.h"

#include "attnviz/tokenizer.h"

#include <qcustomplot.h>

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMetaMethod>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSplitter>
#include <QStackedWidget>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include <cmath>
#include <limits>

namespace attnviz::ui {

namespace {

const QColor kColorA(33, 102, 172);
const QColor kColorB(230, 120, 20);
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// The least bars a row of the focus plot reads with: its axis rect's width and height.
constexpr double kFocusBarsWidth = 80, kFocusBarsHeight = 40;
// a pair plot this short gives A's and B's titles one line
constexpr int kShortPairHeight = 320;
// The automatic difference scale's smallest half-width (weights are 0..1), and the largest |A − B|
// that is float32 rounding of one computation made twice rather than a difference.
constexpr double kDifferenceFloor = 1e-3;
constexpr double kFloatRounding = 1e-6;

QCPAxisRect *tokenRect(QCPAxisRect *rect)
{
    setTokenAxes(rect);
    rect->axis(QCPAxis::atBottom)->setLabel(QStringLiteral("key"));
    rect->axis(QCPAxis::atLeft)->setLabel(QStringLiteral("query"));
    return rect;
}

QCPColorMap *makeMap(QCPAxisRect *rect)
{
    auto *m = new QCPColorMap(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
    m->setInterpolate(false);
    m->setAntialiased(false);
    m->setTightBoundary(false);
    return m;
}

QCPItemText *makeMessage(QCustomPlot *plot, QCPAxisRect *rect)
{
    auto *t = new QCPItemText(plot);
    t->setClipAxisRect(rect);
    t->position->setAxisRect(rect);
    t->position->setType(QCPItemPosition::ptAxisRectRatio);
    t->position->setCoords(0.5, 0.5);
    t->setPositionAlignment(Qt::AlignCenter);
    t->setPadding(QMargins(10, 6, 10, 6));
    t->setBrush(QBrush(QColor(255, 255, 255, 230)));
    t->setPen(QPen(QColor(150, 150, 150)));
    t->setVisible(false);
    return t;
}

QCPTextElement *makeTitle(QCustomPlot *plot, const QFont &base)
{
    return new QCPTextElement(plot, QString(), QFont(base.family(), 8, QFont::Bold));
}

void setRange(QCPAxisRect *rect, int rows, int cols)
{
    rect->axis(QCPAxis::atBottom)->setRange(-0.5, std::max(1, cols) - 0.5);
    rect->axis(QCPAxis::atLeft)->setRange(-0.5, std::max(1, rows) - 0.5);
}

int findWord(const QStringList &tokens, const QString &word)
{
    const std::string w = lowerCase(word.trimmed().toStdString());
    for (int i = 0; i < tokens.size(); ++i)
        if (tokens[i].toStdString() == w)
            return i;
    return -1;
}

double cosine(const Eigen::VectorXd &a, const Eigen::VectorXd &b)
{
    const double na = a.norm(), nb = b.norm();
    return na > 0 && nb > 0 ? a.dot(b) / (na * nb) : kNaN;
}

void setBars(QCPBars *bars, const QVector<double> &values)
{
    QVector<double> keys(values.size());
    for (int i = 0; i < keys.size(); ++i)
        keys[i] = i;
    bars->setData(keys, values, true);
}

QVector<double> barValues(const QCPBars *bars)
{
    QVector<double> v;
    for (auto it = bars->data()->constBegin(); it != bars->data()->constEnd(); ++it)
        v << it->value;
    return v;
}

} // namespace

// Drawn over a colour map: masked cells hatched, the numbers in the cells when they fit, the
// selected query row outlined.
class CellOverlay : public QCPLayerable {
public:
    CellOverlay(QCustomPlot *plot, QCPAxisRect *rect, QCPColorMap *map)
        : QCPLayerable(plot, QStringLiteral("main")), m_rect(rect), m_map(map)
    {
    }

    const WeightMatrix<float> *matrix = nullptr;
    const BoolMat *mask = nullptr;
    // a long text's map where it shows single cells: the weights of `region` (x keys, y queries) of
    // a tq x tk matrix
    const Mat<float> *cells = nullptr;
    QRect region;
    int tq = 0, tk = 0;
    int query = -1;
    int decimals = 2;
    bool numbers = true;

protected:
    void applyDefaultAntialiasingHint(QCPPainter *p) const override { applyAntialiasingHint(p, false, QCP::aeOther); }
    QRect clipRect() const override { return m_rect->rect(); }

    void draw(QCPPainter *p) override
    {
        if (!matrix && cells && numbers && m_map->visible()) {
            const int dec = decimals;
            paintRegionNumbers(p, m_rect, m_map, *cells, region, tq, tk, 12.0, 0.4, [dec](float v) {
                return std::isfinite(v) ? QString::number(double(v), 'f', dec) : QStringLiteral("NaN");
            });
            return;
        }
        if (!matrix || !m_map->visible() || matrix->size() == 0)
            return;
        const int tq = int(matrix->rows()), tk = int(matrix->cols());
        const CellRange cells = visibleCells(m_rect, tq, tk);
        const bool masked = mask && mask->rows() == tq && mask->cols() == tk;
        if (masked)
            paintMaskedCells(p, m_rect, *mask, cells);
        const QRectF one = cellPixels(m_rect, 0, 0, 0, 0);
        // the largest font up to 9 pt (12 px) whose widest number fits a cell, never below the readable
        // minimum (legibility.h); never fewer decimals ("0.00" would hide a difference of 0.004)
        const int dec = decimals;
        const QString widest =
            (decimals > 2 ? QStringLiteral("-0.") : QStringLiteral("0.")) + QString(dec, QLatin1Char('0'));
        const auto f = numbers ? cellNumberFont(parentPlot(), p->font(), one.size(), widest, std::min(12.0, one.height() * 0.4))
                               : std::optional<QFont>();
        if (!numbers)
            parentPlot()->setProperty("attnvizCellNumberPx", 0);
        if (f)
            paintCellNumbers(
                p, m_rect, m_map, *matrix, cells, *f,
                [dec](float v) { return std::isfinite(v) ? QString::number(double(v), 'f', dec) : QStringLiteral("NaN"); },
                [&](int i, int j) { return masked && (*mask)(i, j) && (*matrix)(i, j) == 0.0f; }); // the hatching says it
        if (query >= 0 && query < tq)
            paintOutline(p, cellPixels(m_rect, query, 0, query, tk - 1), QColor(220, 30, 30), 1.5, 3);
    }

private:
    QCPAxisRect *m_rect;
    QCPColorMap *m_map;
};

CompareView::CompareView(LiveSession *sessionA, QWidget *parent)
    : DeferredView(parent), m_sessionA(sessionA), m_sessionB(new LiveSession(this)), m_cosine(kNaN)
{
    auto *outer = new QVBoxLayout(this);
    outer->setContentsMargins(4, 4, 4, 4);

    // Header: one-click comparisons, swap, copy, B's controls.
    auto *header = new QHBoxLayout;
    m_combo = new QComboBox(this);
    m_combo->setObjectName(QStringLiteral("comparisonCombo"));
    m_combo->addItem(tr("One-click comparisons…"), QString());
    for (const ComparisonSpec &c : seedComparisons())
        m_combo->addItem(c.title, c.id);
    m_swap = new QPushButton(tr("Swap A/B"), this);
    m_swap->setObjectName(QStringLiteral("swapButton"));
    m_copy = new QPushButton(tr("B = copy of A"), this);
    m_copy->setObjectName(QStringLiteral("copyButton"));
    m_showControls = new QToolButton(this);
    m_showControls->setObjectName(QStringLiteral("showControlsB"));
    m_showControls->setText(tr("B's controls"));
    m_showControls->setCheckable(true);
    m_showControls->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    m_showControls->setArrowType(Qt::RightArrow);
    header->addWidget(new QLabel(tr("Compare:"), this));
    header->addWidget(m_combo, 1);
    header->addWidget(m_swap);
    header->addWidget(m_copy);
    header->addWidget(m_showControls);
    outer->addLayout(header);

    m_explanation = note(this);
    m_explanation->setObjectName(QStringLiteral("compareExplanation"));
    m_explanation->setText(tr("A is the window's sentence and controls; B has its own, set below or with "
                              "“B's controls”. Pick a one-click comparison to start from the seed notebooks."));
    // in a short window the explanation scrolls: at 1280 × 720 its eight lines left the plots 170 px
    m_explanationScroll = new QScrollArea(this);
    m_explanationScroll->setWidget(m_explanation);
    m_explanationScroll->setWidgetResizable(true);
    m_explanationScroll->setFrameShape(QFrame::NoFrame);
    m_explanationScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_explanationScroll->installEventFilter(this); // its height follows its width
    outer->addWidget(m_explanationScroll);

    // B's sentence(s) and table.
    auto *bRow = new QHBoxLayout;
    m_sentenceB = new QLineEdit(this);
    m_sentenceB->setObjectName(QStringLiteral("sentenceB"));
    m_sentenceB->setPlaceholderText(tr("B's sentence"));
    m_keySentenceB = new QLineEdit(this);
    m_keySentenceB->setObjectName(QStringLiteral("keySentenceB"));
    m_keySentenceB->setPlaceholderText(tr("B's key/value sentence (optional: cross-attention)"));
    m_followCheck = new QCheckBox(tr("B uses A's table"), this);
    m_followCheck->setObjectName(QStringLiteral("followTableCheck"));
    m_followCheck->setChecked(true);
    auto *bLabel = new QLabel(tr("B:"), this);
    QFont bold = bLabel->font();
    bold.setBold(true);
    bLabel->setFont(bold);
    bRow->addWidget(bLabel);
    bRow->addWidget(m_sentenceB, 3);
    bRow->addWidget(m_keySentenceB, 2);
    bRow->addWidget(m_followCheck);
    outer->addLayout(bRow);
    // B's line and, beside it, what both sides share: one row, so the plots keep their height
    auto *infoRow = new QHBoxLayout;
    m_statusB = note(this);
    m_statusB->setObjectName(QStringLiteral("statusB"));
    infoRow->addWidget(m_statusB, 2);
    m_shared = new ElidedLabel(this);
    m_shared->setObjectName(QStringLiteral("compareShared"));
    infoRow->addWidget(m_shared, 3);
    // A tab narrower than roomyWidth() (the Lesson column open at 1280 × 720) shows A's and B's maps
    // or the panel beside them, one at a time, this button switching: side by side the panel was
    // squeezed, its bars cut and its titles printed over each other
    m_panelToggle = new QToolButton(this);
    m_panelToggle->setObjectName(QStringLiteral("comparePanelToggle"));
    m_panelToggle->setCheckable(true);
    m_panelToggle->setToolButtonStyle(Qt::ToolButtonTextOnly);
    m_panelToggle->setToolTip(tr("The tab is too narrow for the maps and the panel beside them: one at a time "
                                 "(a wider window, or the Lesson column closed, shows both)"));
    m_panelToggle->setVisible(false);
    infoRow->addWidget(m_panelToggle, 0, Qt::AlignBottom);
    connect(m_panelToggle, &QToolButton::toggled, this, [this] { fitPanels(); });
    outer->addLayout(infoRow);

    // Plots: [A | B | shared scale] [difference or focus word] [B's controls]
    auto *split = m_split = new QSplitter(Qt::Horizontal, this);
    outer->addWidget(split, 1);

    m_pairPlot = new QCustomPlot(split);
    m_pairPlot->setProperty("attnviz.ownTitles", true); // wrapped to each column by setTitle
    m_pairPlot->setObjectName(QStringLiteral("comparePairPlot"));
    // explicit minimum sizes: a plot's own hint is the width of its title lines, which would widen the window
    // (with the right column's, no more than the tab has at 1280 × 720 between the Controls and
    // Predictions docks: wider, the column ran under the pair's colour scale; the pair's the least
    // in which B's two-line title beside A's query labels leaves A's map as wide as B's)
    m_pairPlot->setMinimumSize(375, 150);
    m_rectA = tokenRect(m_pairPlot->axisRect());
    m_pairPlot->plotLayout()->take(m_rectA);
    m_pairPlot->plotLayout()->simplify();
    m_rectB = tokenRect(new QCPAxisRect(m_pairPlot));
    m_scale = new QCPColorScale(m_pairPlot);
    m_scale->setType(QCPAxis::atRight);
    m_scale->setBarWidth(12);
    m_scale->setGradient(weightsGradient());
    m_scale->axis()->setLabel(tr("weight (A and B)"));
    m_titleA = makeTitle(m_pairPlot, font());
    m_titleB = makeTitle(m_pairPlot, font());
    QCPLayoutGrid *pl = m_pairPlot->plotLayout();
    pl->addElement(0, 0, m_titleA);
    pl->addElement(0, 1, m_titleB);
    pl->addElement(1, 0, m_rectA);
    pl->addElement(1, 1, m_rectB);
    pl->addElement(1, 2, m_scale);
    pl->setRowStretchFactor(0, 0.01);
    pl->setColumnStretchFactor(2, 0.01);
    auto *group = new QCPMarginGroup(m_pairPlot);
    for (QCPLayoutElement *e : std::initializer_list<QCPLayoutElement *>{m_rectA, m_rectB, m_scale})
        e->setMarginGroup(QCP::msTop | QCP::msBottom, group);
    m_mapA = makeMap(m_rectA);
    m_mapB = makeMap(m_rectB);
    m_mapA->setColorScale(m_scale); // one scale: both maps share its data range and gradient
    m_mapB->setColorScale(m_scale);
    m_messageA = makeMessage(m_pairPlot, m_rectA);
    m_messageB = makeMessage(m_pairPlot, m_rectB);
    m_overlayA = new CellOverlay(m_pairPlot, m_rectA, m_mapA);
    m_overlayB = new CellOverlay(m_pairPlot, m_rectB, m_mapB);
    // drag a rectangle on A or B to zoom that side, Shift+drag to pan; double-click or Home: both whole
    m_pairZoom = new PlotZoom(m_pairPlot, [this] {
        setRange(m_rectA, m_homeA.height(), m_homeA.width());
        setRange(m_rectB, m_homeB.height(), m_homeB.width());
    });

    auto *right = new QWidget(split);
    auto *rl = new QVBoxLayout(right);
    rl->setContentsMargins(0, 0, 0, 0);
    m_reason = note(right);
    m_reason->setObjectName(QStringLiteral("noDifferenceReason"));
    m_reason->setStyleSheet(QStringLiteral("color: #b05a00"));
    m_reason->setVisible(false);
    rl->addWidget(m_reason);
    m_right = new QStackedWidget(right);
    rl->addWidget(m_right, 1);
    // the next tokens under both columns, across the tab: under the focus word they took its height
    m_predictions = new ComparePredictions(this);
    outer->addWidget(m_predictions);
    m_mapsA = new LongTextMaps(this);
    m_mapsB = new LongTextMaps(this);
    m_mapsDA = new LongTextMaps(this);
    m_mapsDB = new LongTextMaps(this);
    const auto arrive = [this](LongTextMaps *maps, Mat<float> *into, bool *got, bool *other, void (CompareView::*draw)()) {
        connect(maps, &LongTextMaps::ready, this, [this, into, got, other, draw](int, const Mat<float> &cells) {
            *into = cells;
            *got = true;
            if (*other)
                (this->*draw)();
        });
    };
    arrive(m_mapsA, &m_pooledA, &m_gotA, &m_gotB, &CompareView::drawPooledPair);
    arrive(m_mapsB, &m_pooledB, &m_gotB, &m_gotA, &CompareView::drawPooledPair);
    arrive(m_mapsDA, &m_pooledDA, &m_gotDA, &m_gotDB, &CompareView::drawPooledDifference);
    arrive(m_mapsDB, &m_pooledDB, &m_gotDB, &m_gotDA, &CompareView::drawPooledDifference);
    m_poolTimer = new QTimer(this);
    m_poolTimer->setSingleShot(true);
    m_poolTimer->setInterval(40);
    connect(m_poolTimer, &QTimer::timeout, this, [this] {
        if (m_pooledShown)
            rebuildPooled();
    });

    m_diffPlot = new QCustomPlot(m_right);
    m_diffPlot->setProperty("attnviz.ownTitles", true); // wrapped to each column by setTitle
    m_diffPlot->setObjectName(QStringLiteral("compareDifferencePlot"));
    m_diffPlot->setMinimumSize(150, 150);
    QCPAxisRect *dr = tokenRect(m_diffPlot->axisRect());
    m_diffScale = new QCPColorScale(m_diffPlot);
    m_diffScale->setType(QCPAxis::atRight);
    m_diffScale->setBarWidth(12);
    m_diffScale->setGradient(divergingGradient());
    m_diffScale->axis()->setLabel(tr("A − B"));
    m_diffPlot->plotLayout()->addElement(0, 1, m_diffScale);
    m_diffPlot->plotLayout()->setColumnStretchFactor(1, 0.01);
    auto *dgroup = new QCPMarginGroup(m_diffPlot);
    dr->setMarginGroup(QCP::msTop | QCP::msBottom, dgroup);
    m_diffScale->setMarginGroup(QCP::msTop | QCP::msBottom, dgroup);
    m_diffPlot->plotLayout()->insertRow(0);
    m_diffPlot->plotLayout()->setRowStretchFactor(0, 0.01);
    m_diffTitle = makeTitle(m_diffPlot, font());
    m_diffPlot->plotLayout()->addElement(0, 0, m_diffTitle);
    m_diffMap = makeMap(dr);
    m_diffMap->setColorScale(m_diffScale);
    m_diffMessage = makeMessage(m_diffPlot, dr);
    m_diffOverlay = new CellOverlay(m_diffPlot, dr, m_diffMap);
    m_diffZoom = new PlotZoom(m_diffPlot, [this] {
        setRange(m_diffPlot->axisRect(), m_homeDiff.height(), m_homeDiff.width());
    });
    m_diffOverlay->decimals = 3;
    m_right->addWidget(m_diffPlot);
    // a long text's maps: computed again for the regions shown once a zoom or pan stops moving
    for (QCPAxisRect *r : {m_rectA, m_rectB, m_diffPlot->axisRect()})
        for (QCPAxis *axis : {r->axis(QCPAxis::atBottom), r->axis(QCPAxis::atLeft)})
            connect(axis, qOverload<const QCPRange &>(&QCPAxis::rangeChanged), this, [this] {
                if (m_pooledShown)
                    m_poolTimer->start();
            });

    m_focusPlot = new QCustomPlot(m_right);
    m_focusPlot->setProperty("attnviz.ownTitles", true); // wrapped to each column by setTitle
    m_focusPlot->setObjectName(QStringLiteral("compareFocusPlot"));
    m_focusPlot->setMinimumSize(150, 150);
    m_embRect = m_focusPlot->axisRect();
    m_focusPlot->plotLayout()->take(m_embRect);
    m_focusPlot->plotLayout()->simplify();
    m_rowRectA = new QCPAxisRect(m_focusPlot);
    m_rowRectB = new QCPAxisRect(m_focusPlot);
    auto *rows = new QCPLayoutGrid;
    m_focusTitle = makeTitle(m_focusPlot, font());
    m_focusPlot->plotLayout()->addElement(0, 0, m_focusTitle);
    m_focusPlot->plotLayout()->addElement(1, 0, rows);
    m_focusPlot->plotLayout()->addElement(2, 0, m_embRect);
    m_focusPlot->plotLayout()->setRowStretchFactors({0.01, 1.0, 1.0});
    rows->addElement(0, 0, m_rowRectA);
    rows->addElement(0, 1, m_rowRectB);
    auto bars = [](QCPAxisRect *r, const QColor &c) {
        auto *b = new QCPBars(r->axis(QCPAxis::atBottom), r->axis(QCPAxis::atLeft));
        b->setPen(QPen(c.darker(130)));
        b->setBrush(c);
        b->setWidth(0.7);
        r->axis(QCPAxis::atBottom)->grid()->setVisible(false);
        return b;
    };
    const QFont small(font().family(), 8);
    for (QCPAxisRect *r : {m_rowRectA, m_rowRectB, m_embRect})
        for (QCPAxis *ax : {r->axis(QCPAxis::atBottom), r->axis(QCPAxis::atLeft)}) {
            ax->setLabelFont(small);
            ax->setTickLabelFont(small);
        }
    for (QCPAxisRect *r : {m_rowRectA, m_rowRectB}) {
        r->axis(QCPAxis::atBottom)->setTicker(QSharedPointer<QCPAxisTickerText>::create());
        r->axis(QCPAxis::atBottom)->setTickLabelRotation(-60);
        r->axis(QCPAxis::atBottom)->setSubTicks(false);
        r->axis(QCPAxis::atLeft)->setLabel(tr("weight"));
        fitValueTicks(r->axis(QCPAxis::atLeft)); // ~100 px high in the window at 1280 × 720
    }
    m_rowBarsA = bars(m_rowRectA, kColorA);
    m_rowBarsB = bars(m_rowRectB, kColorB);
    m_embBarsA = bars(m_embRect, kColorA);
    m_embBarsB = bars(m_embRect, kColorB);
    m_rowBarsA->removeFromLegend();
    m_rowBarsB->removeFromLegend();
    m_embBarsA->setName(tr("A"));
    m_embBarsB->setName(tr("B"));
    m_embBarsA->setWidth(0.4);
    m_embBarsB->setWidth(0.4);
    auto *bg = new QCPBarsGroup(m_focusPlot);
    bg->setSpacingType(QCPBarsGroup::stAbsolute);
    bg->setSpacing(0);
    m_embBarsA->setBarsGroup(bg);
    m_embBarsB->setBarsGroup(bg);
    m_embRect->axis(QCPAxis::atBottom)->setLabel(tr("contextual embedding, by dimension: A blue, B orange"));
    m_embRect->axis(QCPAxis::atBottom)->setProperty("attnvizFullLabel", m_embRect->axis(QCPAxis::atBottom)->label());
    fitValueTicks(m_embRect->axis(QCPAxis::atLeft));
    m_focusPlot->legend->setVisible(false); // the colours are named in the axis label: no room for a legend
    m_right->addWidget(m_focusPlot);

    m_controlsB = new ControlPanel;
    m_controlsB->setObjectName(QStringLiteral("controlsB"));
    m_controlsB->followHeadElsewhere(tr("Both sides show the head chosen in the main controls (or the head average "
                                        "when the head counts differ)."));
    m_controlsB->setBundledAvailable(hasBundledEmbeddings(), tr("This build has no bundled word vectors."));
    m_controlsScroll = new QScrollArea(split);
    m_controlsScroll->setWidget(m_controlsB);
    m_controlsScroll->setWidgetResizable(true);
    m_controlsScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_controlsScroll->setMinimumWidth(m_controlsB->sizeHint().width() +
                                      m_controlsScroll->verticalScrollBar()->sizeHint().width() + 4);
    m_controlsScroll->setVisible(false);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    split->setStretchFactor(2, 0);
    split->setChildrenCollapsible(false);

    for (QCustomPlot *p : {m_pairPlot, m_diffPlot, m_focusPlot})
        p->installEventFilter(this);                     // re-wraps the titles on resize
    m_rectB->axis(QCPAxis::atLeft)->setLabel(QString()); // as A's

    // Token labels once the layout is known; a change is laid out again before the plot is drawn
    // (B's query labels hidden while its rows are A's words and shown again for its own: drawn
    // before the next layout, QCPAxis::draw indexed the emptied label list by the ticks)
    relabelAfterLayout(m_pairPlot, this, [this] {
        bool c = labelTokenAxis(m_rectA->axis(QCPAxis::atBottom), m_labelsKA);
        c |= labelTokenAxis(m_rectA->axis(QCPAxis::atLeft), m_labelsQA);
        c |= labelTokenAxis(m_rectB->axis(QCPAxis::atBottom), m_labelsKB);
        // B beside A with the same query words: A's labels name B's rows too, and B's map gets their width
        QCPAxis *leftB = m_rectB->axis(QCPAxis::atLeft);
        const bool sharedRows = !m_labelsQA.isEmpty() && m_labelsQA == m_labelsQB;
        if (leftB->tickLabels() == sharedRows) {
            leftB->setTickLabels(!sharedRows);
            c = true;
        }
        if (sharedRows) {
            if (!leftB->label().isEmpty()) {
                leftB->setLabel(QString());
                c = true;
            }
        } else {
            c |= labelTokenAxis(leftB, m_labelsQB);
        }
        c |= equalMapWidths();
        return c;
    });
    relabelAfterLayout(m_diffPlot, this, [this] {
        QCPAxisRect *r = m_diffPlot->axisRect();
        bool c = labelTokenAxis(r->axis(QCPAxis::atBottom), m_labelsKA);
        c |= labelTokenAxis(r->axis(QCPAxis::atLeft), m_labelsQA);
        return c;
    });
    relabelAfterLayout(m_focusPlot, this, [this] {
        // A's and B's rows side by side where each keeps room for its bars beside its value ticks,
        // else B under A: side by side in a narrow column (the Lesson column open at 1400 px) A's
        // bars had 40 px and B's none, their labels over the bars
        bool c = false;
        if (auto *rows = qobject_cast<QCPLayoutGrid *>(m_rowRectB->layout())) {
            // the arrangement whose smallest bars have the most room for what they need: stacked,
            // three rows of plots share the height (in a short panel they were squeezed flat); side
            // by side, A and B share the width. Each row loses its rotated token labels and two-line
            // title under its bars and its value ticks beside them; the embedding its numbers and
            // two-line title.
            const double line = QFontMetricsF(m_rowRectA->axis(QCPAxis::atBottom)->tickLabelFont()).lineSpacing();
            // (what the rows' labels take as laid out where that is more: long rotated tokens, the
            // value ticks' numbers and title)
            double under = 5.5 * line, beside = 3.5 * line;
            for (QCPAxisRect *r : {m_rowRectA, m_rowRectB}) {
                under = std::max(under, double(r->margins().top() + r->margins().bottom()));
                beside = std::max(beside, double(r->margins().left() + r->margins().right()));
            }
            const double embUnder = 3.5 * line;
            const double w = m_focusPlot->width(), h = m_focusPlot->height() - m_focusTitle->outerRect().height();
            auto room = [](double bw, double bh) { return std::min(bw / kFocusBarsWidth, bh / kFocusBarsHeight); };
            const auto arrange = [&](bool embedding) {
                const double e = embedding ? embUnder : 0, n = embedding ? 1 : 0;
                const double stackedRoom = room(w - beside, (h - 2 * under - e) / (2 + n));
                const double besideRoom = room((w - 2 * beside) / 2, (h - under - e) / (1 + n));
                return std::pair(stackedRoom > besideRoom, std::max(stackedRoom, besideRoom));
            };
            // the embedding's bars where the rows keep room for theirs beside them, else the rows
            // alone (a 1280 × 720 window): its cosine stays in the title
            const bool embedding = arrange(true).second >= 1.0;
            const bool stacked = arrange(embedding).first;
            QCPLayoutGrid *top = m_focusPlot->plotLayout();
            if ((m_embRect->layout() != nullptr) != embedding) {
                if (embedding)
                    top->addElement(2, 0, m_embRect);
                else
                    top->take(m_embRect);
                top->simplify();
                m_embRect->setVisible(embedding);
                c = true;
            }
            if ((rows->rowCount() > 1) != stacked) {
                rows->take(m_rowRectB);
                rows->simplify();
                rows->addElement(stacked ? 1 : 0, stacked ? 0 : 1, m_rowRectB);
                c = true;
            }
            // stacked, the two rows take two thirds of the height, the embedding the rest
            QList<double> stretch{0.01, stacked ? 2.0 : 1.0};
            if (embedding)
                stretch << 1.0;
            if (top->rowCount() == stretch.size())
                top->setRowStretchFactors(stretch);
        }
        c |= labelTokenAxis(m_rowRectA->axis(QCPAxis::atBottom), m_labelsFocusA);
        c |= labelTokenAxis(m_rowRectB->axis(QCPAxis::atBottom), m_labelsFocusB);
        // the embedding's title on one line where it fits its axis, else on two, else elided
        QCPAxis *emb = m_embRect->axis(QCPAxis::atBottom);
        const QString full = emb->property("attnvizFullLabel").toString();
        const QFontMetricsF fm(emb->labelFont());
        const double room = m_embRect->width() - 4;
        QString label = full;
        if (fm.horizontalAdvance(full) > room) {
            label = tr("contextual embedding, by dimension:\nA blue, B orange");
            QStringList lines = label.split(QLatin1Char('\n'));
            for (QString &line : lines)
                line = fm.elidedText(line, Qt::ElideRight, std::max(20.0, room));
            label = lines.join(QLatin1Char('\n'));
        }
        if (emb->label() != label) {
            emb->setLabel(label);
            c = true;
        }
        return c;
    });

    // Wiring: A is followed live, B recomputes on its own controls.
    connect(m_sessionA, &LiveSession::snapshotChanged, this, [this] {
        if (!m_bSet && m_sessionA->snapshot() && m_sessionA->snapshot()->hasResult())
            copyAToB();
        syncTable();
        rebuild();
    });
    connect(m_sessionA, &LiveSession::selectionChanged, this, [this](int head, int query) {
        const bool sameHeads = m_shownA && m_shownB && m_shownA->hasResult() && m_shownB->hasResult() &&
                               m_shownA->attention(m_layerA).numHeads == m_shownB->attention(m_sessionB->selectedLayer()).numHeads;
        if ((sameHeads && head != m_head) || !showsDifference()) {
            rebuild();
            return;
        }
        m_overlayA->query = m_overlayB->query = m_diffOverlay->query = query;
        m_pairPlot->replot(QCustomPlot::rpQueuedReplot);
        m_diffPlot->replot(QCustomPlot::rpQueuedReplot);
    });
    connect(m_sessionA, &LiveSession::headDisplayChanged, this, [this] { rebuild(); });
    // View ▸ fixed weight scale: both scales change with it
    connect(AppearanceManager::instance(), &AppearanceManager::changed, this, [this] { rebuild(); });
    connect(m_sessionA, &LiveSession::layerChanged, this, [this] { rebuild(); });
    connect(m_sessionB, &LiveSession::layerChanged, this, [this] { rebuild(); }); // B's own layer (two layers compared)
    connect(m_sessionB, &LiveSession::snapshotChanged, this, [this] {
        updateStatusB();
        rebuild();
    });
    connect(m_sentenceB, &QLineEdit::textChanged, m_sessionB, &LiveSession::setSentence);
    connect(m_keySentenceB, &QLineEdit::textChanged, m_sessionB, &LiveSession::setKeySentence);
    connect(m_controlsB, &ControlPanel::settingsChanged, this, [this](const ComputeSettings &s) {
        if (s.backend != m_backendB) { // made on the GUI thread, as a QRhi needs
            m_backendB = s.backend;
            m_sessionB->setBackend(makeWindowBackend(s.backend.toStdString()));
        }
        m_sessionB->setSettings(s);
    });
    connect(m_controlsB, &ControlPanel::useBundledRequested, this, [this] {
        Status st;
        std::shared_ptr<const EmbeddingTable> t = sharedBundledEmbeddings(&st);
        if (!t) {
            warnPlain(this, tr("Cannot load the bundled vectors"), shownText(QString::fromStdString(st.message)));
            return;
        }
        useTableB(std::move(t));
    });
    connect(m_controlsB, &ControlPanel::loadEmbeddingsRequested, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Load embeddings for B"), QString(),
                                                          tr("Word vectors (*.txt *.vec *.bin *.avec);;All files (*)"));
        if (path.isEmpty())
            return;
        auto t = std::make_shared<EmbeddingTable>();
        const Status st = loadEmbeddings(path.toStdString(), *t);
        if (!st.ok() || t->empty()) {
            warnPlain(this, tr("Cannot load embeddings"),
                      shownText(st.ok() ? tr("%1 holds no vectors").arg(path) : QString::fromStdString(st.message)));
            return;
        }
        useTableB(t);
    });
    connect(m_controlsB, &ControlPanel::loadProjectionsRequested, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Load projections for B"), QString(),
                                                          tr("Projection weights (*.json)"));
        if (path.isEmpty())
            return;
        auto p = std::make_shared<Projections<float>>();
        const Status st = loadProjectionsFile(path, *p);
        if (!st.ok()) {
            warnPlain(this, tr("Cannot load projections"), shownText(QString::fromStdString(st.message)));
            return;
        }
        m_controlsB->setLoadedProjections(p, QFileInfo(path).fileName());
    });
    connect(m_controlsB, &ControlPanel::clearCustomMaskRequested, m_sessionB, &LiveSession::clearCustomMask);
    connect(m_controlsB, &ControlPanel::showNumbersChanged, this, [this](bool on) {
        m_overlayA->numbers = m_overlayB->numbers = m_diffOverlay->numbers = on;
        m_pairPlot->replot(QCustomPlot::rpQueuedReplot);
        m_diffPlot->replot(QCustomPlot::rpQueuedReplot);
    });
    connect(m_followCheck, &QCheckBox::toggled, this, &CompareView::setBTableFollowsA);
    connect(m_showControls, &QToolButton::toggled, this, [this](bool on) {
        m_controlsScroll->setVisible(on);
        m_showControls->setArrowType(on ? Qt::DownArrow : Qt::RightArrow);
    });
    connect(m_copy, &QPushButton::clicked, this, &CompareView::copyAToB);
    connect(m_swap, &QPushButton::clicked, this, &CompareView::swapSides);
    connect(m_combo, qOverload<int>(&QComboBox::activated), this, [this](int index) {
        ComparisonSpec spec;
        if (!findSeedComparison(m_combo->itemData(index).toString(), spec))
            return;
        if (isSignalConnected(QMetaMethod::fromSignal(&CompareView::comparisonRequested))) {
            emit comparisonRequested(spec);
        } else {
            applyToA(spec.a);
            loadSpec(spec);
        }
    });

    rebuild(); // B becomes a copy of A when A has its first result, unless set before
}

CompareView::~CompareView() = default;

// --- sides ---------------------------------------------------------------------------------

CompareSide CompareView::sideA() const
{
    CompareSide a;
    a.title = sideTitle(true);
    a.sentence = m_sessionA->sentence();
    a.keySentence = m_sessionA->keySentence();
    a.settings = m_sessionA->settings();
    a.table = m_sessionA->table();
    a.tableDescription = a.table ? describeTable(*a.table) : QString();
    return a;
}

void CompareView::useTableB(std::shared_ptr<const EmbeddingTable> t)
{
    CompareSide b = sideB();
    b.tableDescription = describeTable(*t);
    b.table = std::move(t);
    setSideB(b);
}

void CompareView::followModel(std::shared_ptr<Model> model, const ModelInfo *info)
{
    m_controlsB->setModel(info);
    m_sessionB->setModel(std::move(model));
}

CompareSide CompareView::sideB() const
{
    CompareSide b;
    b.title = sideTitle(false);
    b.sentence = m_sessionB->sentence();
    b.keySentence = m_sessionB->keySentence();
    b.settings = m_sessionB->settings();
    if (!m_followTable) {
        b.table = m_sessionB->table();
        b.tableDescription = m_tableDescriptionB;
    }
    return b;
}

void CompareView::setSideB(const CompareSide &b)
{
    m_bSet = true;
    m_followTable = !b.table;
    {
        const QSignalBlocker block(m_followCheck);
        m_followCheck->setChecked(m_followTable);
    }
    if (b.table) {
        m_tableDescriptionB = b.tableDescription.isEmpty() ? describeTable(*b.table) : b.tableDescription;
        m_sessionB->setTable(b.table);
        m_controlsB->setDModel(b.table->dim());
        m_controlsB->setTableDescription(m_tableDescriptionB);
    } else {
        syncTable();
    }
    m_controlsB->setSettings(b.settings); // emits settingsChanged -> B's session
    m_keySentenceB->setText(b.keySentence);
    m_sentenceB->setText(b.sentence);
}

void CompareView::setBTableFollowsA(bool follow)
{
    m_followTable = follow;
    const QSignalBlocker block(m_followCheck);
    m_followCheck->setChecked(follow);
    syncTable();
}

bool CompareView::bTableFollowsA() const
{
    return m_followTable;
}

void CompareView::syncTable()
{
    if (!m_followTable || !m_sessionA->table() || m_sessionB->table() == m_sessionA->table())
        return;
    m_sessionB->setTable(m_sessionA->table());
    m_tableDescriptionB = describeTable(*m_sessionA->table());
    m_controlsB->setDModel(m_sessionA->table()->dim());
    m_controlsB->setTableDescription(tr("A's table: %1").arg(m_tableDescriptionB));
}

void CompareView::loadSpec(const ComparisonSpec &spec)
{
    m_spec = spec;
    m_focusWord = spec.focusWord;
    m_explanation->setText(spec.explanation);
    fitExplanation();
    const int i = m_combo->findData(spec.id);
    m_combo->setCurrentIndex(i >= 0 ? i : 0);
    setSideB(spec.b);
    rebuild();
}

void CompareView::copyAToB()
{
    CompareSide a = sideA();
    a.table = nullptr; // B follows A's table
    setSideB(a);
}

void CompareView::applyToA(const CompareSide &side)
{
    if (isSignalConnected(QMetaMethod::fromSignal(&CompareView::sideARequested))) {
        emit sideARequested(side);
        return;
    }
    if (side.table)
        m_sessionA->setTable(side.table);
    m_sessionA->setSettings(side.settings);
    m_sessionA->setKeySentence(side.keySentence);
    m_sessionA->setSentence(side.sentence);
}

void CompareView::swapSides()
{
    CompareSide a = sideA(), b = sideB();
    const bool followed = m_followTable;
    if (followed)
        b.table = a.table; // both read the same table: keep it so
    std::swap(m_spec.a, m_spec.b);
    applyToA(b);
    if (followed)
        a.table = nullptr;
    setSideB(a);
    rebuild();
}

void CompareView::setFocusWord(const QString &word)
{
    m_focusWord = word;
    rebuild();
}

QString CompareView::explanation() const
{
    return m_explanation->text();
}

QString CompareView::sharedCaption() const
{
    return m_shared->isHidden() ? QString() : m_shared->text();
}

QString CompareView::sideTitle(bool a) const
{
    // The spec's title while the side still is what the spec set.
    const CompareSide &s = a ? m_spec.a : m_spec.b;
    const LiveSession *session = a ? m_sessionA : m_sessionB;
    if (!s.title.isEmpty() && session->sentence() == s.sentence && session->settings() == s.settings)
        return s.title;
    return a ? QStringLiteral("A") : QStringLiteral("B");
}

void CompareView::updateStatusB()
{
    const SnapshotPtr s = seq2seqNotYet(m_sessionB->snapshot(), tr("Compare"));
    if (!s)
        return;
    if (!s->hasResult()) {
        m_statusB->setText(tr("B: %1").arg(s->message.left(200)));
        return;
    }
    m_statusB->setText(tr("B: %1%2 · %3 · d_model %4 · d_head %5 · %6 · %7 ms")
                           .arg(countText(s->tq(), tr("token"), tr("tokens")))
                           .arg(s->cross ? tr(" × %1").arg(countText(s->tk(), tr("key"), tr("keys"))) : QString())
                           .arg(countText(s->attention(m_sessionB->selectedLayer()).numHeads, tr("head"), tr("heads")))
                           .arg(s->attention(m_sessionB->selectedLayer()).dModel)
                           .arg(s->attention(m_sessionB->selectedLayer()).dHead)
                           .arg(m_followTable ? tr("A's table") : m_tableDescriptionB)
                           .arg(s->computeMs, 0, 'f', s->computeMs < 10 ? 2 : 1));
}

// --- read back -----------------------------------------------------------------------------

bool CompareView::isCurrent() const
{
    const SnapshotPtr a = m_sessionA->snapshot(), b = m_sessionB->snapshot();
    // the shown ones are these snapshots (or, for an encoder-decoder model, their "not yet" copies)
    return a && b && m_shownA && m_shownB && a->generation == m_shownA->generation && b->generation == m_shownB->generation
        && !m_sessionA->busy() && !m_sessionB->busy() &&
           a->generation == m_sessionA->generation() && b->generation == m_sessionB->generation();
}

double CompareView::cellA(int q, int k) const
{
    return m_mapA->visible() ? m_mapA->data()->cell(k, q) : kNaN;
}
double CompareView::cellB(int q, int k) const
{
    return m_mapB->visible() ? m_mapB->data()->cell(k, q) : kNaN;
}
double CompareView::cellDifference(int q, int k) const
{
    return showsDifference() && m_diffMap->visible() ? m_diffMap->data()->cell(k, q) : kNaN;
}
QCPRange CompareView::rangeA() const
{
    return m_mapA->dataRange();
}
QCPRange CompareView::rangeB() const
{
    return m_mapB->dataRange();
}
QCPRange CompareView::differenceRange() const
{
    return m_diffMap->dataRange();
}
bool CompareView::showsDifference() const
{
    return m_right->currentWidget() == m_diffPlot;
}
QString CompareView::titleA() const
{
    return m_rawTitles.value(m_titleA);
}
QString CompareView::titleB() const
{
    return m_rawTitles.value(m_titleB);
}
QString CompareView::differenceTitle() const
{
    return m_rawTitles.value(m_diffTitle);
}
QString CompareView::focusTitle() const
{
    return m_rawTitles.value(m_focusTitle);
}

void CompareView::setTitle(QCPTextElement *title, const QString &text)
{
    m_rawTitles.insert(title, text);
    wrapTitle(title);
}

void CompareView::wrapTitle(QCPTextElement *title)
{
    // as many characters a line as the title's column holds: the plots are narrow beside the docks
    const QCustomPlot *plot = title->parentPlot();
    // 8 pt, or the readable minimum when that is larger (18 px in presentation mode, legibility.h)
    QFont f = title->font();
    f.setPointSizeF(8);
    if (QFontInfo(f).pixelSize() < minimumLabelPixels())
        f.setPixelSize(minimumLabelPixels());
    if (title->font() != f)
        title->setFont(f);
    int px = plot->width();
    if (title == m_titleA || title == m_titleB)
        px = (px - 90) / 2;
    else if (title == m_diffTitle)
        px -= 90;
    // the characters' mean width in this title's own text (bold, with its symbols), or a typical
    // configuration's where that is wider
    const QFontMetricsF fm(title->font());
    const QString raw = m_rawTitles.value(title);
    double charWidth = fm.horizontalAdvance(QStringLiteral("d_model 50, d_head 50 · softmax · mask")) / 37.0;
    if (!raw.isEmpty())
        charWidth = std::max(charWidth, fm.horizontalAdvance(raw) / raw.size());
    const int chars = std::max(16, int(0.9 * px / std::max(1.0, charWidth)));
    QStringList lines;
    if ((title == m_titleA || title == m_titleB) && plot->height() < kShortPairHeight) {
        // A's and B's titles one line where the pair is short (a 1280 × 720 window): the side and
        // its head, elided to the column, without the sentence (whole in its editor above): wrapped,
        // the titles took the maps' height and broke their first line in two
        lines << fm.elidedText(raw.section(QLatin1Char('\n'), 0, 0), Qt::ElideRight, std::max(40, px));
    } else {
        for (const QString &line : raw.split(QLatin1Char('\n')))
            lines << wrapText(line, chars);
        lines = lines.join(QLatin1Char('\n')).split(QLatin1Char('\n'));
    }
    title->setText(lines.join(QLatin1Char('\n')));
    // A's and B's columns at least as wide as their titles' longest line: a narrow map's column
    // otherwise cut its title at both ends
    if (title == m_titleA || title == m_titleB) {
        double widest = 0;
        for (const QString &line : lines)
            widest = std::max(widest, fm.horizontalAdvance(line));
        title->setMinimumSize(QSize(std::max(80, int(std::ceil(widest)) + 6), title->minimumSize().height()));
    }
    // its row as tall as its wrapped lines: with the height of fewer lines (or none) the title's row
    // has a 0.01 stretch and gave way first, and its first line went over the plot's top edge
    const int tall = int(lines.join(QLatin1Char('\n')).count(QLatin1Char('\n')) + 1) * QFontMetrics(title->font()).height() + 6;
    if (title->minimumSize().height() != tall) // (fewer lines: no taller, or the maps lose that height)
        title->setMinimumSize(QSize(std::max(80, title->minimumSize().width()), tall));
}

bool CompareView::eventFilter(QObject *watched, QEvent *e)
{
    if (watched == m_explanationScroll && e->type() == QEvent::Resize)
        fitExplanation();
    if (e->type() == QEvent::Resize) {
        for (QCPTextElement *t : {m_titleA, m_titleB, m_diffTitle, m_focusTitle})
            if (t->parentPlot() == watched) {
                wrapTitle(t);
                t->parentPlot()->replot(QCustomPlot::rpQueuedReplot);
            }
    }
    return DeferredView::eventFilter(watched, e);
}

QString CompareView::messageA() const
{
    return m_messageA->visible() ? QString(m_messageA->text()).replace(QLatin1Char('\n'), QLatin1Char(' ')) : QString();
}

QString CompareView::messageB() const
{
    return m_messageB->visible() ? QString(m_messageB->text()).replace(QLatin1Char('\n'), QLatin1Char(' ')) : QString();
}

QString CompareView::noDifferenceReason() const
{
    return m_reason->isHidden() ? QString() : m_reason->text();
}

QVector<double> CompareView::focusRowA() const
{
    return barValues(m_rowBarsA);
}
QVector<double> CompareView::focusRowB() const
{
    return barValues(m_rowBarsB);
}
QVector<double> CompareView::focusEmbeddingA() const
{
    return barValues(m_embBarsA);
}
QVector<double> CompareView::focusEmbeddingB() const
{
    return barValues(m_embBarsB);
}

// --- drawing -------------------------------------------------------------------------------

void CompareView::rebuild()
{
    if (deferred())
        return;
    // an encoder-decoder model's two sides: one line each, not yet compared
    m_shownA = seq2seqNotYet(m_sessionA->snapshot(), tr("Compare"));
    m_shownB = seq2seqNotYet(m_sessionB->snapshot(), tr("Compare"));
    m_layerA = m_sessionA->selectedLayer();
    if (rebuildPooled())
        return;
    // a long text beside a short one, or one of another length: no cells pair up
    const QString needs = tr("the other side a long text of the same length");
    m_shownA = longTextNotYet(m_shownA, tr("Compare"), needs);
    m_shownB = longTextNotYet(m_shownB, tr("Compare"), needs);
    const bool okA = m_shownA && m_shownA->hasResult(), okB = m_shownB && m_shownB->hasResult();
    // The head: A's selection on both sides; with different head counts each side's average.
    m_head = m_sessionA->shownHead();
    if (okA && okB && m_shownA->attention(m_layerA).numHeads != m_shownB->attention(m_sessionB->selectedLayer()).numHeads)
        m_head = -1;
    if (okA && m_head >= m_shownA->attention(m_layerA).numHeads)
        m_head = -1;
    rebuildPair();
    m_predictions->setSnapshots(m_shownA, m_shownB);
    const bool sameShape = okA && okB && m_shownA->tq() == m_shownB->tq() && m_shownA->tk() == m_shownB->tk();
    if (okA && okB && !sameShape)
        rebuildFocus();
    else
        rebuildDifference();
    emit updated();
}

QStringList CompareView::sharedParts(const QStringList &partsA, const QStringList &partsB)
{
    QStringList shared;
    for (int i = 1; i < partsA.size(); ++i) // [0]: the head, always in each side's own title
        if (partsB.contains(partsA[i]))
            shared << partsA[i];
    return shared;
}

QStringList CompareView::ownParts(QStringList parts, const QStringList &shared)
{
    parts.erase(std::remove_if(parts.begin() + std::min<qsizetype>(1, parts.size()), parts.end(),
                               [&](const QString &part) { return shared.contains(part); }),
                parts.end());
    return parts;
}

void CompareView::showShared(const QStringList &shared, bool sameSentence, const QString &sentence)
{
    QString caption;
    if (!shared.isEmpty())
        caption = tr("Both: %1").arg(shared.join(QStringLiteral(" · ")));
    if (sameSentence)
        caption += (caption.isEmpty() ? tr("Both: ") : QStringLiteral(" · ")) + QStringLiteral("“%1”").arg(elide(sentence, 120));
    m_shared->setText(caption);
    m_shared->setVisible(!caption.isEmpty());
}

void CompareView::rebuildPair()
{
    const bool headsDiffer = m_shownA && m_shownB && m_shownA->hasResult() && m_shownB->hasResult() &&
                             m_shownA->attention(m_layerA).numHeads != m_shownB->attention(m_sessionB->selectedLayer()).numHeads;
    // What both sides share is said once, above them; each title keeps its head and what differs.
    const bool bothOk = m_shownA && m_shownB && m_shownA->hasResult() && m_shownB->hasResult();
    QStringList partsA, partsB, shared;
    if (bothOk) {
        const auto config = [&](const SnapshotPtr &s, int layer) {
            return describeConfig(*s, layer, m_head, m_head < 0 ? HeadDisplay::Average : HeadDisplay::One).split(QStringLiteral(" · "));
        };
        partsA = config(m_shownA, m_layerA);
        partsB = config(m_shownB, m_sessionB->selectedLayer());
        shared = sharedParts(partsA, partsB);
    }
    const bool sameSentence = bothOk && m_shownA->sentence == m_shownB->sentence && m_shownA->keySentence == m_shownB->keySentence;
    showShared(shared, sameSentence, sameSentence ? m_shownA->sentence : QString());
    double lo = 0, hi = 0;
    bool any = false;
    const auto side = [&](const SnapshotPtr &s, bool isA, QCPColorMap *map, QCPItemText *message, QCPTextElement *title,
                          CellOverlay *overlay, QStringList &ql, QStringList &kl) {
        QCPAxisRect *rect = isA ? m_rectA : m_rectB;
        ql.clear();
        kl.clear();
        overlay->matrix = nullptr;
        overlay->mask = nullptr;
        QString head = sideTitle(isA);
        if (!s || !s->hasResult()) {
            map->data()->clear();
            map->setVisible(false);
            message->setText(wrapText(s ? s->message : tr("Computing…"), 40));
            message->setVisible(true);
            setTitle(title, head + (s ? QStringLiteral("\n“%1”").arg(elide(s->sentence, 80)) : QString()));
            (isA ? m_homeA : m_homeB) = QSize(1, 1);
            return;
        }
        ql = s->queryLabels;
        kl = s->keyLabels;
        const int layer = isA ? m_layerA : m_sessionB->selectedLayer();
        const WeightMatrix<float> &w = s->weights(layer, m_head);
        int pool = 1;
        map->setData(colorMapData(w, nullptr, 1024, &pool), false);
        map->setVisible(true);
        message->setVisible(false);
        overlay->matrix = pool == 1 ? &w : nullptr;
        overlay->mask = &s->seq(layer).mask;
        overlay->query = m_sessionA->selectedQuery();
        extendFiniteRange(w, lo, hi, any);
        const HeadDisplay d = m_head < 0 ? HeadDisplay::Average : HeadDisplay::One;
        const QStringList own = ownParts(describeConfig(*s, layer, m_head, d).split(QStringLiteral(" · ")), shared);
        QString t = head + QStringLiteral(" — ") + own.join(QStringLiteral(" · "));
        if (headsDiffer)
            t += tr(" (head counts differ: each side's head average)");
        setTitle(title, sameSentence ? t : t + QStringLiteral("\n“%1”").arg(elide(s->sentence, 80)));
        rect->axis(QCPAxis::atBottom)->setLabel(s->cross ? tr("key (key/value sentence)") : tr("key"));
        (isA ? m_homeA : m_homeB) = QSize(s->tk(), s->tq());
    };
    const QSize wasA = m_homeA, wasB = m_homeB;
    side(m_shownA, true, m_mapA, m_messageA, m_titleA, m_overlayA, m_labelsQA, m_labelsKA);
    side(m_shownB, false, m_mapB, m_messageB, m_titleB, m_overlayB, m_labelsQB, m_labelsKB);
    // other lengths of text: the whole matrices; otherwise the region looked at stays
    if (wasA != m_homeA || wasB != m_homeB || !m_pairZoom->isZoomed())
        m_pairZoom->reset();
    // One scale for both: the range covers A and B.
    QCPColorGradient gradient;
    const QCPRange range = weightsRange(lo, hi, gradient);
    m_scale->setGradient(gradient);
    m_scale->setDataRange(range);
    m_scale->axis()->setLabel(weightScaleLabel(tr("weight (A and B)"), range));
    m_scale->setVisible(any);
    m_pairPlot->replot(QCustomPlot::rpQueuedReplot);
}

bool CompareView::equalMapWidths()
{
    // The columns share the width by their stretch factors, labels included: A's query labels (B
    // shows none when its rows are A's) left A's map a third of B's. Each column's factor is its
    // map's equal share plus its own margins.
    // The factors are a function of the plot's width and the margins alone, set exactly: taken from
    // the columns' own widths (rounded to pixels, moved by the factors set here) and kept within a
    // hundredth, they depended on the layouts before, and A's map came back a pixel wider after Esc.
    const QMargins ma = m_rectA->margins(), mb = m_rectB->margins();
    const double marginA = ma.left() + ma.right(), marginB = mb.left() + mb.right();
    QCPLayoutGrid *pl = m_pairPlot->plotLayout();
    // the two columns' width: the layout's but the colour scale's column and the spacing
    const double total = pl->rect().width() - m_scale->outerRect().width() - 2 * pl->columnSpacing();
    if (total <= marginA + marginB + 2)
        return false;
    const double inner = (total - marginA - marginB) / 2;
    const QList<double> want{2 * (inner + marginA) / total, 2 * (inner + marginB) / total, 0.01};
    if (pl->columnStretchFactors() == want)
        return false;
    // the colour scale's column keeps its share of the two maps' (it is held to its minimum width)
    pl->setColumnStretchFactors(want);
    return true;
}

// The difference panel shown, and what the focus-word panel and the last difference left cleared.
void CompareView::showDifferencePanel()
{
    showPanel(m_diffPlot);
    m_reason->setVisible(false);
    m_cosine = kNaN;
    m_focusA = m_focusB = -1;
    m_diffOverlay->matrix = nullptr;
    m_diffOverlay->mask = nullptr;
}

void CompareView::rebuildDifference()
{
    showDifferencePanel();
    QCPAxisRect *rect = m_diffPlot->axisRect();
    const bool okA = m_shownA && m_shownA->hasResult(), okB = m_shownB && m_shownB->hasResult();
    if (!okA || !okB) {
        m_diffMap->data()->clear();
        m_diffMap->setVisible(false);
        m_diffScale->setVisible(false);
        QString why;
        if (!okA && !okB)
            why = tr("Neither side has a result.");
        else
            why = tr("No difference: %1 has no result (%2).")
                      .arg(okA ? QStringLiteral("B") : QStringLiteral("A"))
                      .arg(okA ? (m_shownB ? m_shownB->message : tr("computing"))
                               : (m_shownA ? m_shownA->message : tr("computing")));
        m_diffMessage->setText(wrapText(why, 40));
        m_diffMessage->setVisible(true);
        setTitle(m_diffTitle, tr("Difference A − B"));
        m_maxAbs = kNaN;
        m_homeDiff = QSize(1, 1);
        m_diffZoom->reset();
        m_diffPlot->replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    const WeightMatrix<float> &a = m_shownA->weights(m_layerA, m_head);
    const WeightMatrix<float> &b = m_shownB->weights(m_sessionB->selectedLayer(), m_head);
    m_diff.resize(a.rows(), a.cols());
    for (Eigen::Index i = 0; i < a.rows(); ++i)
        m_diff.dense().row(i) = a.row(i) - b.row(i);
    double m = 0;
    for (Eigen::Index k = 0; k < m_diff.size(); ++k)
        if (std::isfinite(m_diff.data()[k]))
            m = std::max(m, double(std::abs(m_diff.data()[k])));
    m_maxAbs = m;
    int pool = 1;
    m_diffMap->setData(colorMapData(m_diff, nullptr, 1024, &pool), false);
    m_diffMap->setVisible(true);
    m_diffScale->setVisible(true);
    m_diffMessage->setVisible(false);
    // symmetric: white is 0; on the fixed scale ±1, so that a difference of 0.005 looks like one; on
    // the automatic scale at least ±kDifferenceFloor, so that float32 rounding (1e-7 where A and B are
    // the same computation made twice) stays white instead of filling the scale
    const bool fixed = fixedWeightScale() && m <= 1.0;
    const double r = fixed ? 1.0 : std::max(m, kDifferenceFloor);
    m_diffScale->setDataRange(QCPRange(-r, r));
    m_diffScale->axis()->setLabel(weightScaleLabel(tr("A − B"), QCPRange(-r, r)) +
                                  (!fixed && m < kDifferenceFloor ? tr(" · at least ±%1").arg(kDifferenceFloor) : QString()));
    m_diffOverlay->matrix = pool == 1 ? &m_diff : nullptr;
    m_diffOverlay->query = m_sessionA->selectedQuery();
    QString t = tr("Difference A − B · max |A−B| = %1").arg(m, 0, 'f', 4);
    if (m < kFloatRounding)
        t += tr(" (A and B agree up to float rounding)");
    if (m_shownA->attention(m_layerA).numHeads != m_shownB->attention(m_sessionB->selectedLayer()).numHeads)
        t += tr("\nhead average of A (%1) − head average of B (%2)")
                 .arg(m_shownA->attention(m_layerA).numHeads)
                 .arg(m_shownB->attention(m_sessionB->selectedLayer()).numHeads);
    // (the same head on both sides: A's and B's titles say which)
    if (m_shownA->queryLabels != m_shownB->queryLabels || m_shownA->keyLabels != m_shownB->keyLabels)
        t += tr("\nThe sentences differ: cells compare positions, not words.");
    t += tr("\nred: more weight in A · blue: more in B");
    setTitle(m_diffTitle, t);
    rect->axis(QCPAxis::atBottom)->setLabel(tr("key (A's words)"));
    rect->axis(QCPAxis::atLeft)->setLabel(QString()); // A's words, as beside it
    if (const QSize was = m_homeDiff; (m_homeDiff = QSize(m_shownA->tk(), m_shownA->tq())) != was || !m_diffZoom->isZoomed())
        m_diffZoom->reset();
    m_diffPlot->replot(QCustomPlot::rpQueuedReplot);
}

void CompareView::rebuildFocus()
{
    showPanel(m_focusPlot);
    m_maxAbs = kNaN;
    const ComputeSnapshot &a = *m_shownA, &b = *m_shownB;
    m_reason->setText(tr("No cell-by-cell difference: A is %1 × %2 tokens, B %3 × %4 — the cells do not pair up. "
                         "Shown instead: one word in both sentences.")
                          .arg(a.tq())
                          .arg(a.tk())
                          .arg(b.tq())
                          .arg(b.tk()));
    m_reason->setVisible(true);

    // The focus word: the comparison's word when A has it, else A's selected query.
    m_focusA = m_focusWord.isEmpty() ? -1 : findWord(a.queryLabels, m_focusWord);
    if (m_focusA < 0)
        m_focusA = std::clamp(m_sessionA->selectedQuery(), 0, a.tq() - 1);
    const QString word = a.queryLabels.at(m_focusA);
    m_focusB = findWord(b.queryLabels, word);

    const WeightMatrix<float> &wa = a.weights(m_layerA, m_head);
    QVector<double> rowA(int(wa.cols()));
    for (int j = 0; j < rowA.size(); ++j)
        rowA[j] = wa(m_focusA, j);
    setBars(m_rowBarsA, rowA);
    m_labelsFocusA = a.keyLabels;
    m_rowRectA->axis(QCPAxis::atBottom)->setRange(-0.6, rowA.size() - 0.4);
    m_rowRectA->axis(QCPAxis::atBottom)->setLabel(tr("A: “%1” (row %2) attends to").arg(word).arg(m_focusA));
    QVector<double> rowB;
    m_labelsFocusB.clear();
    if (m_focusB >= 0) {
        const WeightMatrix<float> &wb = b.weights(m_sessionB->selectedLayer(), m_head);
        rowB.resize(int(wb.cols()));
        for (int j = 0; j < rowB.size(); ++j)
            rowB[j] = wb(m_focusB, j);
        m_labelsFocusB = b.keyLabels;
        m_rowRectB->axis(QCPAxis::atBottom)->setLabel(tr("B: “%1” (row %2) attends to").arg(word).arg(m_focusB));
    } else {
        m_rowRectB->axis(QCPAxis::atBottom)->setLabel(tr("B has no “%1”").arg(word));
    }
    setBars(m_rowBarsB, rowB);
    m_rowRectB->axis(QCPAxis::atBottom)->setRange(-0.6, std::max<int>(1, rowB.size()) - 0.4);
    double top = 0;
    for (double v : rowA + rowB)
        if (std::isfinite(v))
            top = std::max(top, v);
    for (QCPAxisRect *r : {m_rowRectA, m_rowRectB})
        r->axis(QCPAxis::atLeft)->setRange(0, top > 0 ? top * 1.08 : 1.0); // one scale for both rows

    // Contextual embeddings (the attention output rows) and their cosine.
    m_cosine = kNaN;
    QVector<double> ea, eb;
    const Mat<float> &oa = a.seq(m_layerA).output;
    for (int j = 0; j < oa.cols(); ++j)
        ea << oa(m_focusA, j);
    if (m_focusB >= 0) {
        const Mat<float> &ob = b.seq(m_sessionB->selectedLayer()).output;
        for (int j = 0; j < ob.cols(); ++j)
            eb << ob(m_focusB, j);
    }
    setBars(m_embBarsA, ea);
    setBars(m_embBarsB, eb);
    double lo = 0, hi = 0;
    for (double v : ea + eb)
        if (std::isfinite(v)) {
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
    m_embRect->axis(QCPAxis::atBottom)->setRange(-0.7, std::max(ea.size(), eb.size()) - 0.3);
    m_embRect->axis(QCPAxis::atLeft)->setRange(lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo) + 1e-9);
    QString title;
    if (m_focusB < 0) {
        title = tr("“%1” is not in B's sentence: pick a word both sentences share (the selected query in A)").arg(word);
    } else if (ea.size() != eb.size()) {
        title = tr("Contextual embedding of “%1”: A has %2 dimensions, B %3 — no cosine")
                    .arg(word)
                    .arg(ea.size())
                    .arg(eb.size());
    } else {
        m_cosine = cosine(Eigen::Map<const Eigen::VectorXd>(ea.constData(), ea.size()),
                          Eigen::Map<const Eigen::VectorXd>(eb.constData(), eb.size()));
        title = tr("“%1” in A vs B — contextual embeddings: cosine similarity %2").arg(word).arg(m_cosine, 0, 'f', 3);
        const Mat<float> &xa = a.queryInput(m_layerA), &xb = b.queryInput(m_sessionB->selectedLayer());
        if (xa.cols() == ea.size() && xb.cols() == eb.size() && !a.deep() && !b.deep()) {
            Eigen::VectorXd ia = xa.row(m_focusA).cast<double>().transpose(),
                            ib = xb.row(m_focusB).cast<double>().transpose();
            title += tr("\n(cosine to its input vector: A %1, B %2)")
                         .arg(cosine(Eigen::Map<const Eigen::VectorXd>(ea.constData(), ea.size()), ia), 0, 'f', 3)
                         .arg(cosine(Eigen::Map<const Eigen::VectorXd>(eb.constData(), eb.size()), ib), 0, 'f', 3);
        }
    }
    if (a.attention(m_layerA).numHeads != b.attention(m_sessionB->selectedLayer()).numHeads)
        title += tr("\nrows: head average of A (%1) and of B (%2)").arg(a.attention(m_layerA).numHeads).arg(b.attention(m_sessionB->selectedLayer()).numHeads);
    setTitle(m_focusTitle, title);
    m_overlayA->query = m_focusA; // the rows shown on the right, outlined in the heatmaps
    m_overlayB->query = m_focusB;
    fitPanels(); // the button names the word
    m_pairPlot->replot(QCustomPlot::rpQueuedReplot);
    m_focusPlot->replot(QCustomPlot::rpQueuedReplot);
}

void CompareView::showPanel(QWidget *panel)
{
    if (m_right->currentWidget() == panel)
        return;
    m_right->setCurrentWidget(panel);
    fitPanels(); // the button names the panel
    // the focus word's three plots need more room than one difference heatmap
    const QList<int> s = m_split->sizes();
    const int total = s.value(0) + s.value(1);
    if (total > 0) {
        const int right = panel == m_focusPlot ? total * 45 / 100 : total * 2 / 5;
        m_split->setSizes({total - right, right, s.value(2)});
    }
}

void CompareView::fitExplanation()
{
    // the whole text where it takes at most an eighth of the tab (three lines at least), else that
    // much and a scroll bar
    const QScrollBar *bar = m_explanationScroll->verticalScrollBar();
    const int width = m_explanationScroll->width() - 2;
    const int whole = m_explanation->heightForWidth(width);
    // whole lines, none cut across (a line of the label's text is a little taller than the font's)
    const int lines = std::max(1, int(std::lround(double(whole) / std::max(1, m_explanation->fontMetrics().lineSpacing()))));
    const double line = double(whole) / lines;
    const int most = int(std::ceil(std::max(3, int(height() / 8 / line)) * line));
    const int h = whole <= most ? whole : std::min(most, m_explanation->heightForWidth(width - bar->sizeHint().width()));
    if (h > 0 && m_explanationScroll->height() != h)
        m_explanationScroll->setFixedHeight(h);
}

int CompareView::roomyWidth() const
{
    // the focus word's two rows of bars side by side, each with its value ticks beside it
    const double ticks = 3.5 * QFontMetricsF(m_rowRectA->axis(QCPAxis::atBottom)->tickLabelFont()).lineSpacing();
    return m_pairPlot->minimumWidth() + m_split->handleWidth() + int(std::ceil(2 * (kFocusBarsWidth + ticks))) + 8;
}

void CompareView::fitPanels()
{
    const bool narrow = width() < roomyWidth();
    if (!narrow && m_panelToggle->isChecked()) { // a wider tab shows both; narrow again, the maps first
        const QSignalBlocker quiet(m_panelToggle);
        m_panelToggle->setChecked(false);
    }
    const bool panel = narrow && m_panelToggle->isChecked();
    m_pairPlot->setVisible(!panel);
    m_right->parentWidget()->setVisible(!narrow || panel);
    m_panelToggle->setVisible(narrow);
    const bool word = m_shownA && m_focusA >= 0 && m_focusA < m_shownA->queryLabels.size();
    const QString name = m_right->currentWidget() != m_focusPlot ? tr("Difference A − B")
                         : word ? tr("“%1” in A and B").arg(m_shownA->queryLabels.at(m_focusA).trimmed())
                                : tr("The focus word");
    m_panelToggle->setText(panel ? tr("◀ Maps A and B") : name + tr(" ▶"));
}

bool CompareView::event(QEvent *e)
{
    if (e->type() == QEvent::Resize) {
        fitExplanation();
        fitPanels();
        if (isVisible() && width() < roomyWidth())
            emit needsRoom();
    }
    if (e->type() == QEvent::PaletteChange) {
        m_pairPlot->replot(QCustomPlot::rpQueuedReplot);
        m_diffPlot->replot(QCustomPlot::rpQueuedReplot);
        m_focusPlot->replot(QCustomPlot::rpQueuedReplot);
    }
    return QWidget::event(e);
}

// --- long texts: pooled maps ---------------------------------------------------------------

void CompareView::setPooling(Pooling pooling)
{
    if (pooling == m_pooling)
        return;
    m_pooling = pooling;
    if (m_pooledShown)
        rebuild();
}

bool CompareView::mapsPending() const
{
    return m_poolTimer->isActive() || m_mapsA->running() || m_mapsB->running() || m_mapsDA->running() ||
           m_mapsDB->running();
}

QRect CompareView::pooledRegionA() const { return m_pooledShown ? m_mapsA->request().region : QRect(); }
QRect CompareView::pooledRegionB() const { return m_pooledShown ? m_mapsB->request().region : QRect(); }
QRect CompareView::differenceRegion() const { return m_pooledShown ? m_mapsDA->request().region : QRect(); }

bool CompareView::rebuildPooled()
{
    const SnapshotPtr &a = m_shownA, &b = m_shownB;
    const bool longTexts = a && b && a->hasResult() && b->hasResult() && a->longText && b->longText;
    const int layerB = m_sessionB->selectedLayer();
    const std::shared_ptr<const AttentionTiles<float>> ta = longTexts ? longTextTiles(*a, m_layerA) : nullptr;
    const std::shared_ptr<const AttentionTiles<float>> tb = longTexts ? longTextTiles(*b, layerB) : nullptr;
    if (!ta || !tb || ta->rows() != tb->rows() || ta->cols() != tb->cols()) {
        for (LongTextMaps *maps : {m_mapsA, m_mapsB, m_mapsDA, m_mapsDB})
            maps->cancel();
        m_poolTimer->stop();
        m_pooledShown = false;
        m_gotA = m_gotB = m_gotDA = m_gotDB = false;
        for (Mat<float> *m : {&m_pooledA, &m_pooledB, &m_pooledDA, &m_pooledDB, &m_pooledDiff})
            m->resize(0, 0);
        for (CellOverlay *o : {m_overlayA, m_overlayB, m_diffOverlay})
            o->cells = nullptr;
        return false;
    }
    // the head: A's selection on both sides; with different head counts each side's average
    m_head = m_sessionA->shownHead();
    if (ta->numHeads() != tb->numHeads() || m_head >= ta->numHeads())
        m_head = -1;
    const int tq = ta->rows(), tk = ta->cols();
    // another text or length: the whole matrices first (the plots' ranges are still the last
    // text's); otherwise the regions the plots show
    const bool fresh = !m_pooledShown || m_homeA != QSize(tk, tq) || m_homeB != QSize(tk, tq) || m_homeDiff != QSize(tk, tq);
    MapRegion whole;
    whole.region = QRect(0, 0, tk, tq);
    whole.outRows = std::min(tq, kPooledCells);
    whole.outCols = std::min(tk, kPooledCells);
    const auto regionOf = [&](QCPAxisRect *rect) { return fresh ? whole : visibleMapRegion(rect, tq, tk, kPooledCells, false); };
    const auto request = [&](const std::shared_ptr<const AttentionTiles<float>> &tiles, const MapRegion &m) {
        LongTextMaps::Request r;
        r.tiles = tiles;
        r.heads = {m_head};
        r.region = m.region;
        r.outRows = m.outRows;
        r.outCols = m.outCols;
        r.pooling = m_pooling;
        return r;
    };
    const MapRegion ra = regionOf(m_rectA), rb = regionOf(m_rectB), rd = regionOf(m_diffPlot->axisRect());
    m_pooledShown = true;
    m_predictions->setSnapshots(a, b);
    bool started = false;
    // a map already asked for (back or still coming) is not asked again: a pan that ends where it
    // began, or the other side's zoom, leaves it
    const auto ask = [&](LongTextMaps *maps, const LongTextMaps::Request &r, bool &got) {
        if (maps->request() == r && (got || maps->running()))
            return;
        got = false;
        maps->start(r);
        started = true;
    };
    ask(m_mapsA, request(ta, ra), m_gotA);
    ask(m_mapsB, request(tb, rb), m_gotB);
    ask(m_mapsDA, request(ta, rd), m_gotDA); // the same region of both: the tiles' cache serves a map
    ask(m_mapsDB, request(tb, rd), m_gotDB); // the sides computed already
    if (fresh && started) {
        const QString computing = tr("Computing the pooled map of %L1 tokens…").arg(tq);
        for (auto [map, message] : {std::pair{m_mapA, m_messageA}, {m_mapB, m_messageB}, {m_diffMap, m_diffMessage}}) {
            map->setVisible(false);
            message->setText(computing);
            message->setVisible(true);
        }
        for (CellOverlay *o : {m_overlayA, m_overlayB, m_diffOverlay})
            o->cells = nullptr;
        showPanel(m_diffPlot);
        m_reason->setVisible(false);
        m_pairPlot->replot(QCustomPlot::rpQueuedReplot);
        m_diffPlot->replot(QCustomPlot::rpQueuedReplot);
    }
    // titles and the head may have changed with the selection: what is back is drawn again
    if (m_gotA && m_gotB)
        drawPooledPair();
    if (m_gotDA && m_gotDB)
        drawPooledDifference();
    return true;
}

namespace {

// "each cell the largest of up to 5 × 5 weights" for a map of `region` in out rows x cols; "single
// weights" where each cell is one.
QString pooledCells(const QRect &region, int outRows, int outCols, bool mean)
{
    if (outRows == region.height() && outCols == region.width())
        return CompareView::tr("single weights, with their numbers where they fit");
    return CompareView::tr("each cell the %1 of up to %2 × %3 weights")
        .arg(mean ? CompareView::tr("mean") : CompareView::tr("largest"))
        .arg((region.height() + outRows - 1) / std::max(1, outRows))
        .arg((region.width() + outCols - 1) / std::max(1, outCols));
}

QString regionNote(const QRect &region, int tq, int tk)
{
    if (region == QRect(0, 0, tk, tq))
        return QString();
    return CompareView::tr(" (queries %L1–%L2, keys %L3–%L4)")
        .arg(region.top())
        .arg(region.bottom())
        .arg(region.left())
        .arg(region.right());
}

} // namespace

void CompareView::drawPooledPair()
{
    const SnapshotPtr &a = m_shownA, &b = m_shownB;
    if (!m_pooledShown || !a || !b || m_pooledA.size() == 0 || m_pooledB.size() == 0)
        return;
    const int tq = a->tq(), tk = a->tk(), layerB = m_sessionB->selectedLayer();
    const bool mean = m_pooling == Pooling::Mean;
    // what both sides share said once above them, as for short texts; each title keeps the rest
    const HeadDisplay display = m_head < 0 ? HeadDisplay::Average : HeadDisplay::One;
    const QStringList partsA = describeConfig(*a, m_layerA, m_head, display).split(QStringLiteral(" · "));
    const QStringList partsB = describeConfig(*b, layerB, m_head, display).split(QStringLiteral(" · "));
    const QStringList shared = sharedParts(partsA, partsB);
    showShared(shared, a->sentence == b->sentence, a->sentence);
    float hi = 0;
    const auto side = [&](const SnapshotPtr &s, const Mat<float> &cells, LongTextMaps *maps, bool isA) {
        const QRect region = maps->request().region;
        QCPColorMap *map = isA ? m_mapA : m_mapB;
        map->setData(pooledMapData(cells, region), false);
        map->setVisible(true);
        (isA ? m_messageA : m_messageB)->setVisible(false);
        CellOverlay *o = isA ? m_overlayA : m_overlayB;
        o->matrix = nullptr;
        o->mask = nullptr;
        const bool single = cells.rows() == region.height() && cells.cols() == region.width();
        o->cells = single ? &cells : nullptr;
        o->region = region;
        o->tq = tq;
        o->tk = tk;
        for (Eigen::Index i = 0; i < cells.size(); ++i)
            if (std::isfinite(cells.data()[i]))
                hi = std::max(hi, cells.data()[i]);
        const QStringList own = ownParts(isA ? partsA : partsB, shared);
        const QString pooled = tr("Long text (%L1 tokens)%2: %3")
                                   .arg(tq)
                                   .arg(regionNote(region, tq, tk))
                                   .arg(pooledCells(region, int(cells.rows()), int(cells.cols()), mean));
        setTitle(isA ? m_titleA : m_titleB, sideTitle(isA) + QStringLiteral(" — ") + own.join(QStringLiteral(" · ")) +
                                                QLatin1Char('\n') + pooled);
        (isA ? m_labelsQA : m_labelsQB) = s->queryLabels;
        (isA ? m_labelsKA : m_labelsKB) = s->keyLabels;
        (isA ? m_rectA : m_rectB)->axis(QCPAxis::atBottom)->setLabel(tr("key"));
    };
    const QSize wasA = m_homeA, wasB = m_homeB;
    side(a, m_pooledA, m_mapsA, true);
    side(b, m_pooledB, m_mapsB, false);
    m_homeA = m_homeB = QSize(tk, tq);
    if (wasA != m_homeA || wasB != m_homeB || !m_pairZoom->isZoomed())
        m_pairZoom->reset();
    // a zoom kept from before (the whole matrices drawn for a new text of the same length): the
    // maps of the regions shown follow
    if (visibleMapRegion(m_rectA, tq, tk, kPooledCells, false).region != m_mapsA->request().region ||
        visibleMapRegion(m_rectB, tq, tk, kPooledCells, false).region != m_mapsB->request().region)
        m_poolTimer->start();
    QCPColorGradient gradient;
    const QCPRange range = weightsRange(0.0, double(hi), gradient);
    m_scale->setGradient(gradient);
    m_scale->setDataRange(range);
    m_scale->axis()->setLabel(weightScaleLabel(tr("weight (A and B)"), range));
    m_scale->setVisible(true);
    m_pairPlot->replot(QCustomPlot::rpQueuedReplot);
    emit updated();
}

void CompareView::drawPooledDifference()
{
    const SnapshotPtr &a = m_shownA, &b = m_shownB;
    if (!m_pooledShown || !a || !b || m_pooledDA.size() == 0 || m_pooledDA.rows() != m_pooledDB.rows() ||
        m_pooledDA.cols() != m_pooledDB.cols())
        return;
    const int tq = a->tq(), tk = a->tk(), layerB = m_sessionB->selectedLayer();
    const QRect region = m_mapsDA->request().region;
    const bool mean = m_pooling == Pooling::Mean;
    // the difference of the maps of one region: for the mean, the mean-pooled difference of the
    // weights itself (the mean is linear); for the max, a difference of maxima (each cell's largest
    // weight in A minus its largest in B, which may lie on other cells); of single cells, the
    // difference of the weights
    m_pooledDiff = m_pooledDA - m_pooledDB;
    const bool single = m_pooledDiff.rows() == region.height() && m_pooledDiff.cols() == region.width();
    double m = 0;
    for (Eigen::Index i = 0; i < m_pooledDiff.size(); ++i)
        if (std::isfinite(m_pooledDiff.data()[i]))
            m = std::max(m, double(std::abs(m_pooledDiff.data()[i])));
    m_maxAbs = m;
    showDifferencePanel();
    m_diffMap->setData(pooledMapData(m_pooledDiff, region), false);
    m_diffMap->setVisible(true);
    m_diffMessage->setVisible(false);
    m_diffOverlay->matrix = nullptr;
    m_diffOverlay->mask = nullptr;
    m_diffOverlay->cells = single ? &m_pooledDiff : nullptr;
    m_diffOverlay->region = region;
    m_diffOverlay->tq = tq;
    m_diffOverlay->tk = tk;
    m_diffScale->setVisible(true);
    const double r = std::max(m, kDifferenceFloor);
    m_diffScale->setDataRange(QCPRange(-r, r));
    m_diffScale->axis()->setLabel(weightScaleLabel(tr("A − B"), QCPRange(-r, r)));
    QString t = single ? tr("Difference of the weights A − B%1 · max |A−B| = %2").arg(regionNote(region, tq, tk))
                : mean ? tr("Difference of the mean-pooled maps A − B (the mean-pooled difference of the weights)%1 · max |A−B| = %2")
                             .arg(regionNote(region, tq, tk))
                       : tr("Difference of the max-pooled maps A − B: a difference of maxima (A's largest weight in "
                            "a cell minus B's), not the largest difference%1 · max |A−B| = %2")
                             .arg(regionNote(region, tq, tk));
    t = t.arg(m, 0, 'f', 4);
    if (m < kFloatRounding)
        t += tr(" (A and B agree up to float rounding)");
    if (a->attention(m_layerA).numHeads != b->attention(layerB).numHeads)
        t += tr("\nhead average of A (%1) − head average of B (%2)").arg(a->attention(m_layerA).numHeads).arg(b->attention(layerB).numHeads);
    if (a->queryLabels != b->queryLabels || a->keyLabels != b->keyLabels)
        t += tr("\nThe texts differ: cells compare positions, not words.");
    t += tr("\nred: more weight in A · blue: more in B");
    setTitle(m_diffTitle, t);
    m_diffPlot->axisRect()->axis(QCPAxis::atBottom)->setLabel(tr("key (A's words)"));
    m_diffPlot->axisRect()->axis(QCPAxis::atLeft)->setLabel(QString());
    if (const QSize was = m_homeDiff; (m_homeDiff = QSize(tk, tq)) != was || !m_diffZoom->isZoomed())
        m_diffZoom->reset();
    if (visibleMapRegion(m_diffPlot->axisRect(), tq, tk, kPooledCells, false).region != region)
        m_poolTimer->start(); // a zoom kept from before, as for the pair
    m_diffPlot->replot(QCustomPlot::rpQueuedReplot);
    emit updated();
}

} // namespace attnviz::ui
