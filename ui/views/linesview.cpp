// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/linesview.h"

#include "live/longtext.h"
#include "style/legibility.h"
#include "style/plotstyle.h"

#include <qcustomplot.h>

#include <QCheckBox>
#include <QGuiApplication>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <set>

namespace attnviz::ui {

namespace {

constexpr int kMaxLabelChars = 18;
constexpr int kNoChip = -3;
constexpr size_t kWideLines = 3000;

QString chipText(int head)
{
    if (head == -1)
        return QStringLiteral("average");
    if (head == -2)
        return QStringLiteral("all heads");
    return QStringLiteral("head %1").arg(head);
}

} // namespace

// Paints the whole view (chips, lines, labels) in one draw() call, inside the axis rect, so that
// the figure export renders exactly what the window shows.
class LinesCanvas : public QCPLayerable {
public:
    LinesCanvas(QCustomPlot *plot, LinesView *view)
        : QCPLayerable(plot, QStringLiteral("main"))
        , m_view(view)
    {
    }

protected:
    void applyDefaultAntialiasingHint(QCPPainter *p) const override { applyAntialiasingHint(p, true, QCP::aeOther); }
    QRect clipRect() const override { return parentPlot()->axisRect()->rect(); }
    void draw(QCPPainter *p) override { m_view->paint(p, parentPlot()->axisRect()->rect()); }

private:
    LinesView *m_view;
};

LinesView::LinesView(QWidget *parent)
    : DeferredView(parent)
    , m_scroll(new QScrollArea(this))
    , m_plot(new QCustomPlot)
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);

    auto *bar = new QHBoxLayout;
    bar->setContentsMargins(6, 4, 6, 0);
    m_scaleBox = new QCheckBox(tr("Scale each row to its maximum"), this);
    m_scaleBox->setObjectName(QStringLiteral("linesScaleRows"));
    m_scaleBox->setToolTip(tr("Opacity = weight / the largest weight of the query's row, so that flat rows "
                              "(long sentences) still show where they look most."));
    bar->addWidget(m_scaleBox);
    auto *thresholdLabel = new QLabel(tr("Hide lines below opacity"), this);
    bar->addSpacing(12);
    bar->addWidget(thresholdLabel);
    m_thresholdSpin = new QDoubleSpinBox(this);
    m_thresholdSpin->setObjectName(QStringLiteral("linesThreshold"));
    m_thresholdSpin->setRange(0.0, 1.0);
    m_thresholdSpin->setDecimals(3);
    m_thresholdSpin->setSingleStep(0.01);
    m_thresholdSpin->setValue(m_threshold);
    thresholdLabel->setBuddy(m_thresholdSpin);
    bar->addWidget(m_thresholdSpin);
    bar->addSpacing(12);
    auto *hint = new QLabel(tr("Hover a token to isolate its lines · click a query to select it · click a head "
                               "chip to pick it (all heads: to switch it on or off)"),
                            this);
    hint->setObjectName(QStringLiteral("linesHint"));
    hint->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred); // one line, cut where narrow
    hint->setToolTip(hint->text());
    bar->addWidget(hint, 1);
    layout->addLayout(bar);
    connect(m_scaleBox, &QCheckBox::toggled, this, &LinesView::setScaleRows);
    connect(m_thresholdSpin, &QDoubleSpinBox::valueChanged, this, &LinesView::setThreshold);

    m_scroll->setWidget(m_plot);
    m_scroll->setWidgetResizable(true);
    m_scroll->setFrameShape(QFrame::NoFrame);
    m_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    layout->addWidget(m_scroll, 1);

    m_plot->setObjectName(QStringLiteral("linesPlot"));
    m_plot->setMouseTracking(true);
    m_plot->installEventFilter(this);
    QCPAxisRect *rect = m_plot->axisRect();
    rect->setAutoMargins(QCP::msNone);
    rect->setMargins(QMargins(0, 0, 0, 0));
    for (QCPAxis *a : rect->axes())
        a->setVisible(false);
    m_plot->plotLayout()->insertRow(0);
    m_plot->plotLayout()->setRowStretchFactor(0, 0.01);
    m_title = new QCPTextElement(m_plot, QString());
    m_plot->plotLayout()->addElement(0, 0, m_title);
    m_canvas = new LinesCanvas(m_plot, this);

    connect(m_plot, &QCustomPlot::mouseMove, this, &LinesView::onMove);
    connect(m_plot, &QCustomPlot::mouseRelease, this, &LinesView::onRelease);
    updateTitle();
    rebuild();
}

LinesView::~LinesView() = default;

void LinesView::setSnapshot(SnapshotPtr snapshot)
{
    const int oldHeads = m_snapshot && m_snapshot->hasResult() ? m_snapshot->attention(m_layer).numHeads : 0;
    m_snapshot = std::move(snapshot);
    const int heads = m_snapshot && m_snapshot->hasResult() ? m_snapshot->attention(m_layer).numHeads : 0;
    if (heads != oldHeads)
        m_hiddenHeads.clear();
    rebuild();
}

void LinesView::setSelection(int layer, int head, int query)
{
    const bool headChanged = head != m_head;
    const bool queryChanged = query != m_query || layer != m_layer;
    m_layer = layer;
    m_head = head;
    m_query = query;
    if (!headChanged && !queryChanged)
        return;
    rebuild(); // the head changes the lines; the query may move the token window
}

void LinesView::setHeadDisplay(HeadDisplay display)
{
    if (display == m_display)
        return;
    m_display = display;
    rebuild();
}

void LinesView::setThreshold(double threshold)
{
    if (threshold == m_threshold)
        return;
    m_threshold = threshold;
    if (m_thresholdSpin->value() != threshold)
        m_thresholdSpin->setValue(threshold);
    rebuild();
    emit optionsChanged();
}

void LinesView::setScaleRows(bool on)
{
    if (on == m_scaleRows)
        return;
    m_scaleRows = on;
    m_scaleBox->setChecked(on);
    rebuild();
    emit optionsChanged();
}

void LinesView::setHeadEnabled(int head, bool on)
{
    if (on == headEnabled(head))
        return;
    if (on)
        m_hiddenHeads.erase(head);
    else
        m_hiddenHeads.insert(head);
    rebuild();
}

void LinesView::setHover(Side side, int index)
{
    if (side == m_hoverSide && index == m_hover)
        return;
    m_hoverSide = side;
    m_hover = index;
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

QString LinesView::title() const
{
    // as one line: the view wraps it for display
    return QString(m_title->text()).replace(QLatin1Char('\n'), QLatin1Char(' '));
}

bool LinesView::fullyMasked(int query) const
{
    if (!m_snapshot || !m_snapshot->hasResult())
        return false;
    const auto &rows = m_snapshot->seq(m_layer).fullyMaskedRows;
    return std::find(rows.begin(), rows.end(), query) != rows.end();
}

bool LinesView::padded(int key) const
{
    if (!m_snapshot)
        return false;
    const MaskChoice m = m_snapshot->settings.mask;
    return (m == MaskChoice::Padding || m == MaskChoice::CausalPadding) && m_snapshot->paddedKeys.count(key);
}

std::vector<const WeightMatrix<float> *> LinesView::shownMatrices() const
{
    std::vector<const WeightMatrix<float> *> out;
    if (!m_snapshot || !m_snapshot->hasResult())
        return out;
    const int heads = int(m_snapshot->seq(m_layer).weights.size());
    if (m_display == HeadDisplay::All) {
        for (int h = 0; h < heads; ++h)
            if (headEnabled(h))
                out.push_back(&m_snapshot->weights(m_layer, h));
    } else {
        out.push_back(&m_snapshot->weights(m_layer, m_display == HeadDisplay::Average ? -1 : m_head));
    }
    return out;
}

void LinesView::rebuild()
{
    if (deferred())
        return;
    m_queryLabels.clear();
    m_keyLabels.clear();
    m_q0 = m_k0 = m_nq = m_nk = 0;
    m_longKeys.clear();
    m_longRows.clear();
    m_longHeads.clear();
    if (longTextRow()) {
        m_queryLabels = m_snapshot->queryLabels;
        m_keyLabels = m_snapshot->keyLabels;
        m_q0 = std::clamp(m_query, 0, m_snapshot->tq() - 1);
        m_nq = 1;
    } else if (m_snapshot && m_snapshot->hasResult()) {
        m_queryLabels = m_snapshot->queryLabels;
        m_keyLabels = m_snapshot->keyLabels;
        const int tq = m_snapshot->tq(), tk = m_snapshot->tk();
        // the first kMaxTokensPerSide tokens, or a window around the selected query beyond them
        if (tq > kMaxTokensPerSide && m_query >= kMaxTokensPerSide)
            m_q0 = std::clamp(m_query - kMaxTokensPerSide / 2, 0, tq - kMaxTokensPerSide);
        m_nq = std::min(tq - m_q0, kMaxTokensPerSide);
        m_k0 = m_snapshot->cross ? 0 : std::min(m_q0, std::max(0, tk - kMaxTokensPerSide));
        m_nk = std::min(tk - m_k0, kMaxTokensPerSide);
    }
    if (m_hover >= 0 && m_hover >= (m_hoverSide == Side::Query ? m_queryLabels.size() : m_keyLabels.size()))
        m_hover = -1;
    computeLines();
    capLines();
    updateTitle();
    updateHeight();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

bool LinesView::longTextRow() const
{
    return m_snapshot && m_snapshot->hasResult() && m_snapshot->longText;
}

QString LinesView::keyLabel(int key) const
{
    // a long text's keys lie far apart: each says where it is
    return m_longKeys.empty() ? m_keyLabels.value(key) : QStringLiteral("%1 · %2").arg(key).arg(m_keyLabels.value(key));
}

int LinesView::keyRow(int key) const
{
    if (m_longKeys.empty())
        return key - m_k0;
    const auto it = std::lower_bound(m_longKeys.begin(), m_longKeys.end(), key);
    return it != m_longKeys.end() && *it == key ? int(it - m_longKeys.begin()) : -1;
}

void LinesView::computeLongLines()
{
    const std::shared_ptr<const AttentionTiles<float>> tiles = longTextTiles(*m_snapshot, m_layer);
    if (!tiles)
        return;
    const int heads = tiles->numHeads(), query = m_q0;
    const QColor bg = QGuiApplication::palette().color(QPalette::Base);
    std::vector<std::pair<int, QColor>> sources;
    if (m_display == HeadDisplay::All) {
        for (int h = 0; h < heads; ++h)
            if (headEnabled(h))
                sources.push_back({h, readableOn(headColor(h), bg, 4.5)});
    } else if (m_display == HeadDisplay::Average || m_head < 0 || m_head >= heads) {
        sources.push_back({-1, readableOn(headAverageColor(), bg, 4.5)});
    } else {
        sources.push_back({m_head, readableOn(headColor(m_head), bg, 4.5)});
    }
    // each head's row of the selected query, and the keys it weighs most
    std::set<int> keys;
    for (const auto &[head, color] : sources) {
        const Mat<float> row = tiles->wholeRows(head, {query});
        std::vector<float> r(size_t(row.cols()));
        for (int j = 0; j < int(row.cols()); ++j)
            r[size_t(j)] = row(0, j);
        std::vector<int> order;
        for (int j = 0; j < int(r.size()); ++j)
            if (std::isfinite(r[size_t(j)]) && r[size_t(j)] != 0.0f)
                order.push_back(j);
        const size_t top = std::min(order.size(), size_t(kLongTextKeys));
        std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(top), order.end(), [&r](int a, int b) {
            return r[size_t(a)] > r[size_t(b)] || (r[size_t(a)] == r[size_t(b)] && a < b);
        });
        keys.insert(order.begin(), order.begin() + std::ptrdiff_t(top));
        m_longHeads.push_back(head);
        m_longRows.push_back(std::move(r));
    }
    m_longKeys.assign(keys.begin(), keys.end());
    m_k0 = 0;
    m_nk = int(m_longKeys.size());
    for (size_t s = 0; s < sources.size(); ++s) {
        const std::vector<float> &r = m_longRows[s];
        double rowMax = 0;
        if (m_scaleRows)
            for (float v : r)
                if (std::isfinite(v))
                    rowMax = std::max(rowMax, std::abs(double(v)));
        for (int j : m_longKeys) {
            const double v = r[size_t(j)];
            if (!std::isfinite(v) || v == 0.0)
                continue;
            double a = std::abs(v);
            if (m_scaleRows)
                a = rowMax > 0 ? a / rowMax : 0.0;
            if (a < m_threshold)
                continue;
            m_allLines.push_back({query, j, sources[s].first, v, std::clamp(a, 0.0, 1.0), sources[s].second});
        }
    }
}

void LinesView::computeLines()
{
    m_lines.clear();
    m_allLines.clear();
    m_gain = 1;
    if (longTextRow()) {
        computeLongLines();
    } else if (!m_snapshot || !m_snapshot->hasResult()) {
        return;
    } else {
        computeMatrixLines();
    }
    // the strongest line shown is drawn opaque, the others in proportion: a weight's opacity on a
    // dark background falls off faster than on a light one (0.5 of a 3 : 1 blue is ~1.4 : 1 on black)
    double strongest = 0;
    for (const Line &l : m_allLines)
        strongest = std::max(strongest, l.alpha);
    m_gain = strongest > 0 ? 1.0 / strongest : 1.0;
}

void LinesView::computeMatrixLines()
{
    const int heads = int(m_snapshot->seq(m_layer).weights.size());
    struct Source {
        int head;
        const WeightMatrix<float> *w;
        QColor color;
    };
    std::vector<Source> sources;
    // each colour at WCAG AA (4.5 : 1) on the theme's background: an opaque line reads as well as a
    // label (dark blue on black is lightened)
    const QColor bg = QGuiApplication::palette().color(QPalette::Base);
    if (m_display == HeadDisplay::All) {
        for (int h = 0; h < heads; ++h)
            if (headEnabled(h))
                sources.push_back({h, &m_snapshot->weights(m_layer, h), readableOn(headColor(h), bg, 4.5)});
    } else if (m_display == HeadDisplay::Average || m_head < 0 || m_head >= heads) {
        sources.push_back({-1, &m_snapshot->weights(m_layer, -1), readableOn(headAverageColor(), bg, 4.5)});
    } else {
        sources.push_back({m_head, &m_snapshot->weights(m_layer, m_head), readableOn(headColor(m_head), bg, 4.5)});
    }
    const BoolMat &mask = m_snapshot->seq(m_layer).mask;
    const bool masked = mask.size() > 0;
    for (const Source &src : sources) {
        const WeightMatrix<float> &w = *src.w;
        for (int i = m_q0; i < m_q0 + m_nq && i < w.rows(); ++i) {
            double rowMax = 0;
            if (m_scaleRows)
                for (int j = 0; j < w.stored(i); ++j) // the cells not stored are 0
                    if (!(masked && mask(i, j)) && std::isfinite(w(i, j)))
                        rowMax = std::max(rowMax, std::abs(double(w(i, j))));
            for (int j = m_k0; j < m_k0 + m_nk && j < w.cols(); ++j) {
                const double v = w(i, j);
                if (!std::isfinite(v) || (masked && mask(i, j)) || v == 0.0)
                    continue;
                double a = std::abs(v);
                if (m_scaleRows)
                    a = rowMax > 0 ? a / rowMax : 0.0;
                if (a < m_threshold)
                    continue; // fainter than the threshold: not drawn
                m_allLines.push_back({i, j, src.head, v, std::clamp(a, 0.0, 1.0), src.color});
            }
        }
    }
}

QColor LinesView::drawnColor(const Line &line) const
{
    const QColor bg = QGuiApplication::palette().color(QPalette::Base);
    const double a = std::clamp(std::lround(std::clamp(line.alpha * m_gain, 0.0, 1.0) * 255) / 255.0, 0.0, 1.0);
    const auto mix = [a](int c, int b) { return int(std::lround(b + (c - b) * a)); };
    return QColor(mix(line.color.red(), bg.red()), mix(line.color.green(), bg.green()), mix(line.color.blue(), bg.blue()));
}

void LinesView::capLines()
{
    m_lines = m_allLines;
    if (m_lines.size() <= size_t(kMaxDrawnLines))
        return;
    // the most opaque ones: the others are the faintest, and drawing them all costs seconds
    std::nth_element(m_lines.begin(), m_lines.begin() + kMaxDrawnLines, m_lines.end(),
                     [](const Line &a, const Line &b) { return a.alpha > b.alpha; });
    m_lines.resize(size_t(kMaxDrawnLines));
}

std::vector<LinesView::Line> LinesView::lines() const
{
    if (m_hover < 0)
        return m_lines;
    auto own = [this](const Line &l) { return (m_hoverSide == Side::Query ? l.query : l.key) == m_hover; };
    std::vector<Line> out;
    for (const Line &l : m_lines)
        if (!own(l)) {
            out.push_back(l);
            out.back().alpha *= kFade;
        }
    for (const Line &l : m_allLines) // every line of the hovered token, also beyond the cap
        if (own(l))
            out.push_back(l);
    return out;
}

void LinesView::updateTitle()
{
    QFont f = font();
    f.setBold(true);
    m_title->setFont(f);
    if (!m_snapshot) {
        m_title->setText(QStringLiteral("Attention lines"));
        return;
    }
    QString t = QStringLiteral("Attention lines — ")
        + describeConfig(*m_snapshot, m_layer, m_display == HeadDisplay::Average ? -1 : m_head, m_display);
    QStringList notes;
    if (longTextRow())
        notes << QStringLiteral("Long text (%L1 tokens): one query's row is drawn, query %2's, read from q and k; "
                                "right: the %3 keys %4 weighs most, in text order.")
                     .arg(m_snapshot->tq())
                     .arg(m_q0)
                     .arg(kLongTextKeys)
                     .arg(m_display == HeadDisplay::All ? QStringLiteral("each head") : QStringLiteral("it"));
    if (m_snapshot->hasResult()) {
        const int tq = m_snapshot->tq(), tk = m_snapshot->tk();
        if (!longTextRow() && (tq > m_nq || tk > m_nk)) {
            QString which = m_q0 == 0 ? QStringLiteral("the first %1 queries").arg(m_nq)
                                      : QStringLiteral("queries %1–%2 (around the selected query)").arg(m_q0).arg(m_q0 + m_nq - 1);
            if (m_snapshot->cross || m_k0 != m_q0 || m_nk != m_nq)
                which += QStringLiteral(" and keys %1–%2").arg(m_k0).arg(m_k0 + m_nk - 1);
            notes << QStringLiteral("Too many tokens to draw every line: showing %1 of %2 × %3 tokens "
                                    "(at most %4 per side; select a query to move the window). "
                                    "Lines to tokens outside are not drawn.")
                         .arg(which)
                         .arg(tq)
                         .arg(tk)
                         .arg(kMaxTokensPerSide);
        }
        if (m_snapshot->truncated())
            notes << QStringLiteral("%1 tokens pasted: the first %2 are shown (%3).")
                         .arg(std::max(m_snapshot->totalQueryTokens, m_snapshot->totalKeyTokens))
                         .arg(tq)
                         .arg(m_snapshot->cutReason());
        if (!m_snapshot->seq(m_layer).fullyMaskedRows.empty())
            notes << QStringLiteral("Queries in grey italics have every key masked: no weights, no lines.");
        if (m_allLines.size() > m_lines.size())
            notes << QStringLiteral("%L1 lines pass the threshold: drawing the %L2 most opaque (hover a token for all "
                                    "of its lines, or raise the threshold).")
                         .arg(m_allLines.size())
                         .arg(m_lines.size());
        if (m_display == HeadDisplay::All && !m_hiddenHeads.empty())
            notes << QStringLiteral("%1 of %2 heads switched off (click their chips).")
                         .arg(m_hiddenHeads.size())
                         .arg(m_snapshot->attention(m_layer).numHeads);
        QString how = m_scaleRows ? QStringLiteral("opacity = weight / row maximum")
                                  : QStringLiteral("opacity = weight");
        if (m_gain > 1.0 + 1e-9)
            how += QStringLiteral(" × %1 (the strongest line shown opaque)").arg(m_gain, 0, 'f', 2);
        if (m_threshold > 0)
            how += QStringLiteral("; lines below opacity %1 not drawn").arg(m_threshold);
        for (const Line &l : m_lines)
            if (l.weight < 0) {
                how += QStringLiteral("; signed weights: opacity from |w|");
                break;
            }
        notes << how;
    }
    const QFontMetrics fm(f);
    const int chars = std::max(40, (width() - 30) / std::max(1, fm.averageCharWidth()));
    if (!notes.isEmpty())
        t += QLatin1Char('\n') + wrapText(notes.join(QLatin1Char(' ')), chars);
    m_title->setText(t);
}

LinesView::Geometry LinesView::geometry(const QRectF &area) const
{
    Geometry g;
    g.area = area;
    g.font = font();
    QFontMetricsF fm(g.font);
    const double pad = std::round(fm.height() * 0.6);
    const double chipH = fm.height() + 6;
    const int heads = m_snapshot && m_snapshot->hasResult() ? m_snapshot->attention(m_layer).numHeads : 0;

    // the head chips, wrapped onto as many rows as they need
    double x = area.left() + pad, y = area.top() + pad;
    if (heads > 0) {
        std::vector<int> ids;
        for (int h = 0; h < heads; ++h)
            ids.push_back(h);
        ids.push_back(-1);
        if (heads > 1)
            ids.push_back(-2);
        for (int id : ids) {
            const double w = fm.horizontalAdvance(chipText(id)) + chipH + 10;
            if (x + w > area.right() - pad && x > area.left() + pad) {
                x = area.left() + pad;
                y += chipH + 4;
            }
            g.chips.push_back({id, QRectF(x, y, w, chipH)});
            x += w + 6;
        }
        y += chipH + pad * 0.6;
    }

    const int n = std::max({m_nq, m_nk, 1});
    const double natural = fm.height() + 4;
    const double headerH = fm.height();
    g.yRows = y + headerH + pad * 0.3;
    const double avail = area.bottom() - pad - g.yRows;
    g.rowH = std::min(natural * 2.5, avail / n); // spread over a tall figure, up to 2.5 lines a row
    if (g.rowH < fm.height()) {
        // smaller than the text (an export at a small size): shrink the text with the rows
        const double k = std::max(0.3, g.rowH / fm.height());
        g.font.setPointSizeF(std::max(3.0, g.font.pointSizeF() * k));
        fm = QFontMetricsF(g.font);
    }
    g.bold = g.font;
    g.bold.setBold(true);
    const QFontMetricsF bm(g.bold);
    double labelW = bm.horizontalAdvance(QStringLiteral("queries"));
    for (int i = m_q0; i < m_q0 + m_nq; ++i)
        labelW = std::max(labelW, bm.horizontalAdvance(elide(m_queryLabels.value(i), kMaxLabelChars)));
    for (int r = 0; r < m_nk; ++r)
        labelW = std::max(labelW, bm.horizontalAdvance(elide(keyLabel(keyAt(r)), kMaxLabelChars)));
    g.labelW = labelW + fm.height() * 0.8;
    const double mid = std::clamp(area.width() - 2 * pad - 2 * g.labelW, 4.0 * fm.height(), 22.0 * fm.height());
    const double total = 2 * g.labelW + mid;
    g.xLeft = area.left() + std::max(pad, (area.width() - total) / 2);
    g.xRight = g.xLeft + g.labelW + mid;
    g.queryHeader = QRectF(area.left(), y, g.xLeft + g.labelW - area.left(), headerH);
    g.keyHeader = QRectF(g.xRight, y, area.right() - g.xRight, headerH);
    return g;
}

QRectF LinesView::labelRect(const Geometry &g, Side side, int index) const
{
    const int row = side == Side::Query ? index - m_q0 : keyRow(index);
    const int count = side == Side::Query ? m_nq : m_nk;
    if (row < 0 || row >= count)
        return {};
    return QRectF(side == Side::Query ? g.xLeft : g.xRight, g.yRows + row * g.rowH, g.labelW, g.rowH);
}

void LinesView::paint(QCPPainter *p, const QRectF &area)
{
    const bool ok = m_snapshot && m_snapshot->hasResult();
    if (!ok) {
        p->setFont(font());
        p->setPen(palette().color(QPalette::PlaceholderText));
        p->drawText(area, Qt::AlignCenter, wrapText(m_snapshot ? m_snapshot->message : QStringLiteral("Computing…")));
        return;
    }
    const Geometry g = geometry(area);
    const QFontMetricsF fm(g.font);

    // head chips
    p->setFont(g.font);
    for (const auto &[id, r] : g.chips) {
        const bool on = id == -2   ? m_display == HeadDisplay::All
                        : id == -1 ? m_display == HeadDisplay::Average
                                   : (m_display == HeadDisplay::All ? headEnabled(id)
                                                                    : m_display == HeadDisplay::One && m_head == id);
        const QColor c = id >= 0 ? headColor(id) : headAverageColor();
        p->setPen(QPen(c.darker(115), on ? 1.5 : 1.0));
        p->setBrush(on ? QBrush(c) : QBrush(Qt::white));
        p->drawRoundedRect(r.adjusted(0.5, 0.5, -0.5, -0.5), 5, 5);
        if (id >= 0 && !on) { // a swatch keeps the colour readable when off
            p->setPen(Qt::NoPen);
            p->setBrush(c);
            p->drawEllipse(QPointF(r.left() + r.height() / 2, r.center().y()), r.height() * 0.22, r.height() * 0.22);
        }
        p->setPen(on ? contrastingText(c) : QColor(60, 60, 60));
        p->drawText(r.adjusted(id >= 0 && !on ? r.height() * 0.5 : 0, 0, 0, 0), Qt::AlignCenter, chipText(id));
    }

    // text on the plot's background, whatever the theme (presentation mode is dark): labels at
    // WCAG AA (4.5 : 1), headers and dead tokens greyed but still readable
    const QColor bg = QGuiApplication::palette().color(QPalette::Base);
    const QColor ink = readableOn(QGuiApplication::palette().color(QPalette::Text), bg, 7.0);
    const QColor grey = readableOn(QColor(120, 120, 120), bg, 4.5);

    // column headers
    p->setFont(g.bold);
    p->setPen(grey);
    p->drawText(g.queryHeader.adjusted(0, 0, -fm.height() * 0.4, 0), Qt::AlignRight | Qt::AlignVCenter,
                QStringLiteral("queries") + m_snapshot->querySide());
    p->drawText(g.keyHeader.adjusted(fm.height() * 0.4, 0, 0, 0), Qt::AlignLeft | Qt::AlignVCenter,
                QStringLiteral("keys") + m_snapshot->keySide());

    // lines, batched by (colour, 8-bit alpha): one pen and one drawLines call per batch
    const int heads = m_snapshot->attention(m_layer).numHeads;
    std::vector<std::vector<QLineF>> batches(size_t(heads + 1) * 256);
    const double x0 = g.xLeft + g.labelW + 2, x1 = g.xRight - 2;
    const std::vector<Line> shown = lines();
    for (const Line &l : shown) {
        const double a = std::min(1.0, l.alpha * m_gain);
        const int a8 = int(std::lround(a * 255));
        if (a8 <= 0)
            continue;
        const double ya = g.yRows + (l.query - m_q0 + 0.5) * g.rowH;
        const double yb = g.yRows + (keyRow(l.key) + 0.5) * g.rowH;
        batches[size_t(l.head + 1) * 256 + size_t(a8)].push_back(QLineF(x0, ya, x1, yb));
    }
    // Thousands of wide antialiased lines go through the general stroker (seconds); many lines
    // are drawn with a one-pixel cosmetic pen without antialiasing, the raster engine's fast path,
    // and the barely visible ones (faded by a hover) are left out.
    const bool thin = shown.size() > kWideLines;
    const QColor parentBg = QGuiApplication::palette().color(QPalette::Base);
    if (thin)
        p->setRenderHint(QPainter::Antialiasing, false);
    const double width = thin ? 1.0 : std::max(1.0, fm.height() / 9.0);
    // fainter lines first, whatever their head, so that no head covers the others wholesale
    for (int a8 = thin ? 8 : 1; a8 < 256; ++a8) {
        for (int c = 0; c <= heads; ++c) {
            const QColor base = readableOn(c == 0 ? headAverageColor() : headColor(c - 1), parentBg, 4.5);
            const auto &b = batches[size_t(c) * 256 + size_t(a8)];
            if (b.empty())
                continue;
            QColor col = base;
            col.setAlpha(a8);
            QPen pen(col, width, Qt::SolidLine, Qt::FlatCap);
            pen.setCosmetic(thin);
            p->setPen(pen);
            p->drawLines(b.data(), int(b.size()));
        }
    }
    p->setRenderHint(QPainter::Antialiasing, true);

    // token labels
    const double padX = fm.height() * 0.4;
    auto drawLabel = [&](Side side, int index, const QString &text) {
        const QRectF r = labelRect(g, side, index);
        const bool hovered = m_hover == index && m_hoverSide == side;
        const bool selected = side == Side::Query && index == m_query;
        const bool dead = side == Side::Query ? fullyMasked(index) : padded(index);
        const std::vector<uint8_t> &u = side == Side::Query ? m_snapshot->queryUnknown : m_snapshot->keyUnknown;
        const bool unknown = index < int(u.size()) && u[size_t(index)];
        QFont f = selected ? g.bold : g.font;
        f.setItalic(dead);
        f.setStrikeOut(side == Side::Key && dead);
        p->setFont(f);
        const QString shown = elide(text, kMaxLabelChars);
        const double tw = std::max(QFontMetricsF(f).horizontalAdvance(shown), fm.height() * 0.8);
        const QRectF tr = side == Side::Query ? QRectF(r.right() - padX - tw - 3, r.top() + 1, tw + 6, r.height() - 2)
                                              : QRectF(r.left() + padX - 3, r.top() + 1, tw + 6, r.height() - 2);
        if (hovered || selected || unknown) {
            QPen pen(unknown ? QColor(215, 120, 20) : QColor(120, 150, 200), unknown ? 1.2 : 1.0);
            if (unknown)
                pen.setStyle(Qt::DashLine);
            p->setPen(hovered || selected || unknown ? pen : QPen(Qt::NoPen));
            p->setBrush(hovered ? QColor(255, 236, 160) : selected ? QColor(232, 240, 252) : QColor(255, 255, 255, 0));
            p->drawRoundedRect(tr, 4, 4);
        }
        // on a highlight box: dark text on its light fill; else the theme's
        const bool boxed = hovered || selected;
        const QColor under = hovered ? QColor(255, 236, 160) : selected ? QColor(232, 240, 252) : bg;
        const QColor colour = dead ? readableOn(QColor(140, 140, 140), under, 4.5)
            : unknown              ? readableOn(QColor(160, 80, 0), under, 4.5)
            : boxed                ? QColor(20, 30, 50)
                                   : ink;
        p->setPen(colour);
        p->drawText(tr, Qt::AlignCenter, shown);
    };
    for (int i = m_q0; i < m_q0 + m_nq; ++i)
        drawLabel(Side::Query, i, m_queryLabels.value(i));
    for (int r = 0; r < m_nk; ++r)
        drawLabel(Side::Key, keyAt(r), keyLabel(keyAt(r)));
}

void LinesView::updateHeight()
{
    // tall enough for every row at the text's height; the scroll area scrolls beyond the window
    const QFontMetricsF fm(font());
    const int n = std::max({m_nq, m_nk, 1});
    const QRectF probe(0, 0, std::max(200, m_scroll->viewport()->width()), 1e6);
    const Geometry g = geometry(probe);
    const double content = g.yRows + n * (fm.height() + 4) + fm.height() * 0.6;
    const int title = static_cast<const QCPLayoutElement *>(m_title)->minimumOuterSizeHint().height() + m_plot->plotLayout()->rowSpacing();
    const int need = int(std::ceil(content)) + title + 4;
    if (m_plot->minimumHeight() != need)
        m_plot->setMinimumHeight(need);
}

bool LinesView::hitToken(const QPoint &pos, Side &side, int &index) const
{
    if (!m_snapshot || !m_snapshot->hasResult())
        return false;
    const Geometry g = geometry(m_plot->axisRect()->rect());
    if (pos.y() < g.yRows || g.rowH <= 0)
        return false;
    const int row = int(std::floor((pos.y() - g.yRows) / g.rowH));
    if (pos.x() >= g.xLeft && pos.x() < g.xLeft + g.labelW && row < m_nq) {
        side = Side::Query;
        index = m_q0 + row;
        return true;
    }
    if (pos.x() >= g.xRight && pos.x() < g.xRight + g.labelW && row < m_nk) {
        side = Side::Key;
        index = keyAt(row);
        return true;
    }
    return false;
}

int LinesView::hitChip(const QPoint &pos) const
{
    if (!m_snapshot || !m_snapshot->hasResult())
        return kNoChip;
    const Geometry g = geometry(m_plot->axisRect()->rect());
    for (const auto &[id, r] : g.chips)
        if (r.contains(pos))
            return id;
    return kNoChip;
}

QRect LinesView::tokenRect(Side side, int index) const
{
    if (!m_snapshot || !m_snapshot->hasResult())
        return {};
    const QRect r = labelRect(geometry(m_plot->axisRect()->rect()), side, index).toAlignedRect();
    return r.isEmpty() ? QRect() : QRect(m_plot->mapTo(this, r.topLeft()), r.size());
}

QRect LinesView::headChipRect(int head) const
{
    if (!m_snapshot || !m_snapshot->hasResult())
        return {};
    for (const auto &[id, r] : geometry(m_plot->axisRect()->rect()).chips)
        if (id == head) {
            const QRect a = r.toAlignedRect();
            return QRect(m_plot->mapTo(this, a.topLeft()), a.size());
        }
    return {};
}

QString LinesView::tokenTip(Side side, int index) const
{
    const bool q = side == Side::Query;
    QString t = QStringLiteral("%1 %2 “%3”").arg(q ? QStringLiteral("query") : QStringLiteral("key")).arg(index)
                    .arg(q ? m_queryLabels.value(index) : m_keyLabels.value(index));
    const std::vector<uint8_t> &u = q ? m_snapshot->queryUnknown : m_snapshot->keyUnknown;
    if (index < int(u.size()) && u[size_t(index)])
        t += QStringLiteral("\nnot in the embedding table: a deterministic stand-in vector is used");
    if (q && fullyMasked(index))
        t += QStringLiteral("\nevery key is masked for this query: no weights, no lines");
    if (!q && padded(index))
        t += QStringLiteral("\nmasked as padding: no query attends to it");
    int shown = 0;
    for (const Line &l : m_allLines)
        shown += (q ? l.query : l.key) == index;
    t += QStringLiteral("\n%1 line%2 drawn").arg(shown).arg(shown == 1 ? QString() : QStringLiteral("s"));
    if (q)
        t += QStringLiteral(" · click to select this query");
    return t;
}

void LinesView::onMove(QMouseEvent *e)
{
    Side side = Side::Query;
    int index = -1;
    if (hitToken(e->pos(), side, index)) {
        setHover(side, index);
        m_plot->setCursor(side == Side::Query ? Qt::PointingHandCursor : Qt::ArrowCursor);
        QToolTip::showText(m_plot->mapToGlobal(e->pos()), tokenTip(side, index), m_plot);
        return;
    }
    clearHover();
    const int chip = hitChip(e->pos());
    m_plot->setCursor(chip != kNoChip ? Qt::PointingHandCursor : Qt::ArrowCursor);
    if (chip != kNoChip)
        QToolTip::showText(m_plot->mapToGlobal(e->pos()),
                           chip == -2   ? tr("Overlay every head, one colour each")
                           : chip == -1 ? tr("Lines of the average over heads")
                           : m_display == HeadDisplay::All
                               ? tr("Switch head %1 on or off").arg(chip)
                               : tr("Show head %1").arg(chip),
                           m_plot);
    else
        QToolTip::hideText();
}

void LinesView::onRelease(QMouseEvent *e)
{
    if (e->button() != Qt::LeftButton)
        return;
    Side side = Side::Query;
    int index = -1;
    if (hitToken(e->pos(), side, index)) {
        if (side == Side::Query)
            emit querySelected(index);
        return;
    }
    const int chip = hitChip(e->pos());
    if (chip == -2)
        emit headDisplayRequested(HeadDisplay::All);
    else if (chip == -1)
        emit headDisplayRequested(HeadDisplay::Average);
    else if (chip >= 0) {
        if (m_display == HeadDisplay::All)
            setHeadEnabled(chip, !headEnabled(chip));
        else
            emit headSelected(chip);
    }
}

bool LinesView::eventFilter(QObject *watched, QEvent *e)
{
    if (watched == m_plot && e->type() == QEvent::Leave)
        clearHover();
    return DeferredView::eventFilter(watched, e);
}

bool LinesView::event(QEvent *e)
{
    if (e->type() == QEvent::FontChange) {
        updateTitle();
        updateHeight();
        m_plot->replot(QCustomPlot::rpQueuedReplot);
    } else if (e->type() == QEvent::PaletteChange) {
        m_plot->replot(QCustomPlot::rpQueuedReplot);
    } else if (e->type() == QEvent::Resize) {
        updateTitle(); // re-wrapped to the new width
        updateHeight();
    }
    return DeferredView::event(e);
}

} // namespace attnviz::ui
