// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/headrolesview.h"

#include "controls/flowlayout.h"
#include "style/plotstyle.h"
#include "views/headablationmenu.h"
#include "views/normweighting.h"

#include "attnviz/headroles.h"

#include <QComboBox>
#include <QContextMenuEvent>
#include <QCoreApplication>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QLabel>
#include <QMenu>
#include <QMouseEvent>
#include <QPainter>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QStyle>
#include <QThreadPool>
#include <QTimer>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <set>

namespace attnviz::ui {

namespace {

constexpr int kThumb = 92;    // thumbnail side, pixels
constexpr int kGap = 10;      // between cells
constexpr int kLabelW = 34;   // "L11" column in layer order
constexpr int kHeaderH = 18;  // "H0" row in layer order
constexpr int kMinThumb = 30; // the narrowest thumbnail of the compact layout (a score fits)
constexpr int kCompactGap = 4;

const char *shortName(int role)
{
    static const char *names[] = {"prev", "first", "same", "ind", "self"};
    return names[role];
}

QString scoreText(double v)
{
    // three decimals: a lesson quotes 0.996, which two decimals drew as 1.00
    return std::isfinite(v) ? QString::number(v, 'f', 3) : QStringLiteral("–");
}

// makeRowShares on one head's weights (or their mean), stored whole after it.
void rowSharesOf(WeightMatrix<float> &w)
{
    Mat<float> m = w.toDense();
    makeRowShares(m);
    w = m;
}

// `trace` with every row of every head's matrix divided by its sum: a norm-weighted trace's rows as
// each query's shares of ||a v W_O||, which the role scores (defined on rows summing to 1) read.
Trace<float> rowShares(const Trace<float> &trace)
{
    Trace<float> out = trace;
    for (LayerTrace<float> &l : out.layers)
        for (SequenceResult<float> &sr : l.attention.batch) {
            for (WeightMatrix<float> &w : sr.weights)
                rowSharesOf(w);
            rowSharesOf(sr.weightsAvg);
        }
    return out;
}

} // namespace

// Paints the thumbnails and their scores; its size follows the layout of the shown heads.
class HeadRolesCanvas : public QWidget {
public:
    HeadRolesCanvas(HeadRolesView *view, QWidget *parent) : QWidget(parent), m_view(view)
    {
        setObjectName(QStringLiteral("headRolesCanvas"));
        setMouseTracking(true); // headPointed
    }

    // over a head, with a corpus shown: its scores' means and spreads
    bool event(QEvent *e) override
    {
        if (e->type() == QEvent::ToolTip && m_view->showsCorpus()) {
            auto *help = static_cast<QHelpEvent *>(e);
            const QPair<int, int> at = m_view->headAt(help->pos());
            if (at.first >= 0)
                QToolTip::showText(help->globalPos(), m_view->corpusTip(at.first, at.second), this);
            else
                QToolTip::hideText();
            return true;
        }
        return QWidget::event(e);
    }

    // the scores two a line; sorted, a line above each thumbnail names its head
    int textLines() const { return compact() ? HeadRolesView::kRoles : (HeadRolesView::kRoles + 1) / 2; }
    int idLine() const { return sorted() ? fontMetrics().height() : 0; }
    // two scores a line, each as wide as the widest "first 0.000" in the current font
    int scoreW() const
    {
        QFont bold = font();
        bold.setBold(true);
        return QFontMetrics(bold).horizontalAdvance(QStringLiteral("first 0.000")) + 8;
    }
    int fullThumbW() const { return std::max(kThumb, 2 * scoreW()); }
    // the width the grid has: the scroll area's, less a vertical scroll bar whether shown or not (a
    // width that followed the bar could show and hide it in turn)
    int viewportW() const
    {
        const int bar = style()->pixelMetric(QStyle::PM_ScrollBarExtent, nullptr, this);
        return std::max(1, m_view->m_scroll->contentsRect().width() - bar);
    }
    // Layer order where the heads' full cells are wider than the view (8 heads need ~1,550 px): the
    // thumbnails narrow to fit the view's width, down to kMinThumb, their scores one a line as bare
    // numbers, named once per layer in the label column.
    bool compact() const
    {
        return !sorted() && m_view->m_heads > 0 && kLabelW + m_view->m_heads * (fullThumbW() + kGap) > viewportW();
    }
    int gap() const { return compact() ? kCompactGap : kGap; }
    int labelW() const
    {
        if (!compact())
            return kLabelW;
        const QFontMetrics fm = fontMetrics();
        int w = fm.horizontalAdvance(QStringLiteral("L%1").arg(m_view->m_layers - 1));
        for (int r = 0; r < HeadRolesView::kRoles; ++r)
            w = std::max(w, fm.horizontalAdvance(QString::fromLatin1(shortName(r))));
        return w + 8;
    }
    // the head names in layer order: "H5 · kv 1" on one line, or two where the cells are narrow
    bool twoLineHeader() const
    {
        return compact() && m_view->m_kvGroup > 1
            && fontMetrics().horizontalAdvance(m_view->headName(m_view->m_heads - 1)) > thumbW();
    }
    int headerH() const { return twoLineHeader() ? 2 * fontMetrics().height() + 2 : std::max(kHeaderH, fontMetrics().height() + 2); }
    int thumbW() const
    {
        if (!compact())
            return fullThumbW();
        const int number = QFontMetrics(numberFont()).horizontalAdvance(QStringLiteral("0.000")) + 2;
        return std::clamp(fitW(), std::max(kMinThumb, number), fullThumbW());
    }
    // a compact column's width when the heads share the view's width
    int fitW() const { return (viewportW() - labelW() - kCompactGap) / std::max(1, m_view->m_heads) - kCompactGap; }
    // the compact layout's scores: the view's font, down to 3/4 of it where "0.000" is wider than a
    // column that fits (16 heads in ~600 px)
    QFont numberFont() const
    {
        QFont f = font();
        if (!compact())
            return f;
        const int need = QFontMetrics(f).horizontalAdvance(QStringLiteral("0.000")) + 2;
        const double k = std::clamp(double(fitW()) / need, 0.75, 1.0);
        if (k < 1.0) {
            if (f.pointSizeF() > 0)
                f.setPointSizeF(f.pointSizeF() * k);
            else
                f.setPixelSize(std::max(1, int(f.pixelSize() * k)));
        }
        return f;
    }
    int thumbH() const { return compact() ? std::min(kThumb, thumbW()) : kThumb; }
    int cellW() const { return thumbW() + gap(); }
    int cellH() const { return idLine() + thumbH() + textLines() * fontMetrics().height() + gap() + 4; }
    bool sorted() const { return m_view->m_sort >= 0; }
    int columns() const
    {
        if (!sorted())
            return m_view->m_heads;
        const int avail = std::max(cellW(), viewportW() - kGap);
        return std::max(1, avail / cellW());
    }

    // The sizes above, each measured once (a paint and a diff of the cells read them for every head).
    struct Geometry {
        bool sorted = false, compact = false, twoLines = false;
        int lh = 0, scoreW = 0, thumbW = 0, thumbH = 0, labelW = 0, headerH = 0, idLine = 0, textLines = 0;
        int cellW = 0, cellH = 0, columns = 1;
        bool operator==(const Geometry &o) const
        {
            return sorted == o.sorted && compact == o.compact && twoLines == o.twoLines && lh == o.lh && scoreW == o.scoreW
                && thumbW == o.thumbW && thumbH == o.thumbH && labelW == o.labelW && headerH == o.headerH
                && idLine == o.idLine && textLines == o.textLines && cellW == o.cellW && cellH == o.cellH
                && columns == o.columns;
        }
    };
    Geometry geometry() const
    {
        Geometry g;
        g.sorted = sorted();
        g.compact = compact();
        g.twoLines = twoLineHeader();
        g.lh = fontMetrics().height();
        g.scoreW = scoreW();
        g.thumbW = thumbW();
        g.thumbH = thumbH();
        g.labelW = labelW();
        g.headerH = headerH();
        g.idLine = idLine();
        g.textLines = textLines();
        g.cellW = cellW();
        g.cellH = cellH();
        g.columns = columns();
        return g;
    }

    QRect rectFor(int index) const { return rectFor(index, geometry()); } // index into the view's order
    QRect rectFor(int index, const Geometry &g) const
    {
        if (index < 0)
            return QRect();
        const auto [l, h] = m_view->m_order[index];
        if (!g.sorted)
            return QRect(g.labelW + h * g.cellW, g.headerH + l * g.cellH, g.thumbW, g.thumbH);
        const int c = g.columns;
        return QRect(kGap + (index % c) * g.cellW, kGap + (index / c) * g.cellH + g.idLine, g.thumbW, kThumb);
    }
    QPair<int, int> headAt(const QPoint &pos) const
    {
        const Geometry g = geometry();
        for (int i = 0; i < int(m_view->m_order.size()); ++i)
            if (rectFor(i, g).contains(pos))
                return m_view->m_order[i];
        return {-1, -1};
    }

    // What one cell draws (thumbnail, its reading's value, the selection, an ablation's mark, the scores,
    // sorted: its name), and the rectangle that holds all of it: a change repaints that rectangle only.
    struct Cell {
        QRect extent;
        qint64 thumb = 0; // the image's cacheKey: a kept image keeps it
        std::array<double, HeadRolesView::kRoles> scores{};
        double reading = 0;
        QString mark; // the ablated head's label ("" where none; "zero (off)" dashed while the clean model is shown)
        bool selected = false;
        bool operator==(const Cell &o) const
        {
            // the numbers bit for bit (NaN, drawn as "–", equals itself)
            return extent == o.extent && thumb == o.thumb && mark == o.mark && selected == o.selected
                && std::memcmp(scores.data(), o.scores.data(), sizeof(scores)) == 0
                && std::memcmp(&reading, &o.reading, sizeof(reading)) == 0;
        }
    };
    // the label's box, centred on the thumbnail, as drawn
    static QRect labelBox(const QRect &thumb, const QFontMetrics &fm, const QString &text, const QSize &pad)
    {
        QRect at(QPoint(0, 0), fm.size(Qt::TextSingleLine, text) + pad);
        at.moveCenter(thumb.center());
        return at;
    }
    QString markOf(int l, int h) const
    {
        if (!m_view->m_snapshot)
            return QString();
        const QString kind = ablationOf(*m_view->m_snapshot, l, h);
        return kind.isEmpty() || !m_view->m_snapshot->editsShownClean ? kind : tr("%1 (off)").arg(kind);
    }
    Cell cellOf(int i, const Geometry &g, const QFont &bold, const QFont &numbers) const
    {
        const auto [l, h] = m_view->m_order[i];
        const QRect r = rectFor(i, g);
        Cell c;
        c.thumb = m_view->m_thumbs[size_t(l * m_view->m_heads + h)].cacheKey();
        for (int role = 0; role < HeadRolesView::kRoles; ++role)
            c.scores[size_t(role)] = m_view->score(HeadRolesView::Role(role), l, h);
        c.reading = m_view->readingValue(l, h);
        c.mark = markOf(l, h);
        c.selected = l == m_view->m_selLayer && h == m_view->m_selHead;
        // the thumbnail and the selection's 3 px frame on its edge, the name line above, the scores
        // below (each text clipped to its rectangle), the labels on it
        QRect e = r.adjusted(-2, -2, 2, 2);
        if (g.idLine > 0)
            e |= QRect(r.left(), r.top() - g.idLine, r.width(), g.idLine);
        e |= QRect(r.left(), r.bottom() + 2, r.width(), g.textLines * g.lh);
        if (m_view->shownReading() >= 0)
            e |= labelBox(r, QFontMetrics(numbers, this), scoreText(c.reading), QSize(6, 2));
        if (!c.mark.isEmpty())
            e |= labelBox(r, QFontMetrics(bold, this), c.mark, QSize(8, 2));
        c.extent = e;
        return c;
    }
    // The canvas as a whole: a change here repaints it all.
    struct Layout {
        Geometry g;
        QVector<QPair<int, int>> order;
        QSize size;
        int layers = 0, heads = 0, kvGroup = 1, sort = -1;
        QString font;
        qint64 palette = 0;
        bool operator==(const Layout &o) const
        {
            return g == o.g && order == o.order && size == o.size && layers == o.layers && heads == o.heads
                && kvGroup == o.kvGroup && sort == o.sort && font == o.font && palette == o.palette;
        }
    };

    // After the view's state changed: the cells that now draw otherwise are repainted, or the whole
    // canvas where its layout changed.
    void refresh()
    {
        const Geometry g = geometry();
        Layout now{g, m_view->m_order, size(), m_view->m_layers, m_view->m_heads, m_view->m_kvGroup, m_view->m_sort,
                   font().key(), palette().cacheKey()};
        QFont bold = font();
        bold.setBold(true);
        const QFont numbers = numberFont();
        std::vector<Cell> cells;
        cells.reserve(size_t(now.order.size()));
        for (int i = 0; i < int(now.order.size()); ++i)
            cells.push_back(cellOf(i, g, bold, numbers));
        if (!m_drawnValid || !(now == m_drawnLayout)) {
            update();
        } else {
            for (size_t i = 0; i < cells.size(); ++i)
                if (!(cells[i] == m_drawn[i])) {
                    update(m_drawn[i].extent);
                    update(cells[i].extent);
                }
        }
        m_drawnLayout = std::move(now);
        m_drawn = std::move(cells);
        m_drawnValid = true;
    }
    int cellsPainted() const { return m_cellsPainted; }

    void relayout()
    {
        const int n = int(m_view->m_order.size());
        QSize sz(0, 0);
        if (!sorted()) {
            sz = QSize(labelW() + m_view->m_heads * cellW(), headerH() + m_view->m_layers * cellH());
        } else if (n > 0) {
            const int c = columns();
            sz = QSize(kGap + std::min(n, c) * cellW(), kGap + ((n + c - 1) / c) * cellH());
        }
        // the note above wraps in the visible width, not a wider grid's
        m_view->m_note->setMaximumWidth(viewportW());
        setMinimumSize(sz); // the scroll area's column gives it the rest of the width and height
        resize(size().expandedTo(sz));
        refresh();
        m_view->showSelected();
    }

protected:
    // moved down or up by the note's lines above it: the selected head kept in view
    void moveEvent(QMoveEvent *e) override
    {
        QWidget::moveEvent(e);
        m_view->showSelected();
    }

    void paintEvent(QPaintEvent *e) override
    {
        QPainter p(this);
        paintOn(p, e->region());
    }

    // Draws what lies in `region` (the rest is clipped): the background, the names of heads and layers,
    // and the cells whose extent meets it.
    void paintOn(QPainter &p, const QRegion &region)
    {
        const Geometry g = geometry();
        p.fillRect(rect(), palette().color(QPalette::Base));
        p.setPen(palette().color(QPalette::Text));
        const int lh = g.lh;
        const bool narrow = g.compact;
        const QFont numbers = numberFont();
        if (!g.sorted) {
            for (int h = 0; h < m_view->m_heads; ++h) {
                const QString name = g.twoLines ? QStringLiteral("H%1\nkv %2").arg(h).arg(h / m_view->m_kvGroup) : m_view->headName(h);
                p.drawText(QRect(g.labelW + h * g.cellW, 0, g.thumbW, g.headerH), Qt::AlignCenter, name);
            }
            for (int l = 0; l < m_view->m_layers; ++l) {
                const int top = g.headerH + l * g.cellH;
                if (!region.intersects(QRect(0, top, g.labelW, g.cellH)))
                    continue;
                p.drawText(QRect(0, top, g.labelW - 4, g.thumbH), Qt::AlignRight | Qt::AlignVCenter, QStringLiteral("L%1").arg(l));
                if (narrow) // the scores' names, once per layer
                    for (int role = 0; role < HeadRolesView::kRoles; ++role)
                        p.drawText(QRect(0, top + g.thumbH + 1 + role * lh, g.labelW - 4, lh), Qt::AlignRight | Qt::AlignVCenter,
                                   QString::fromLatin1(shortName(role)));
            }
        }
        QFont bold = font();
        bold.setBold(true);
        m_cellsPainted = 0;
        for (int i = 0; i < int(m_view->m_order.size()); ++i) {
            const auto [l, h] = m_view->m_order[i];
            if (!region.intersects(cellOf(i, g, bold, numbers).extent))
                continue;
            ++m_cellsPainted;
            const QRect r = rectFor(i, g);
            const QImage &img = m_view->m_thumbs[size_t(l * m_view->m_heads + h)];
            p.drawImage(r, img);
            if (m_view->shownReading() >= 0) { // the reading's value on its colour
                const QString v = scoreText(m_view->readingValue(l, h));
                p.setFont(numbers);
                const QRect at = labelBox(r, p.fontMetrics(), v, QSize(6, 2));
                p.fillRect(at, QColor(255, 255, 255, 200));
                p.setPen(Qt::black);
                p.drawText(at, Qt::AlignCenter, v);
                p.setFont(font());
            }
            const bool sel = l == m_view->m_selLayer && h == m_view->m_selHead;
            p.setPen(QPen(sel ? QColor(220, 30, 30) : palette().color(QPalette::Mid), sel ? 3 : 1));
            p.setBrush(Qt::NoBrush);
            p.drawRect(r.adjusted(0, 0, -1, -1));
            if (const QString label = markOf(l, h); !label.isEmpty()) { // an ablated head: crossed out, its kind on it
                const bool clean = m_view->m_snapshot->editsShownClean;
                p.save();
                p.setRenderHint(QPainter::Antialiasing);
                p.setPen(QPen(QColor(230, 40, 40), 3, clean ? Qt::DashLine : Qt::SolidLine));
                const QRect in = r.adjusted(4, 4, -4, -4);
                p.drawLine(in.topLeft(), in.bottomRight());
                p.drawLine(in.bottomLeft(), in.topRight());
                p.setFont(bold);
                const QRect at = labelBox(r, p.fontMetrics(), label, QSize(8, 2));
                p.fillRect(at, QColor(200, 30, 30, clean ? 150 : 220));
                p.setPen(Qt::white);
                p.drawText(at, Qt::AlignCenter, label);
                p.restore();
            }
            // scores: two a line, the sorted score in bold
            p.setPen(palette().color(QPalette::Text));
            int y = r.bottom() + 2;
            if (narrow) { // one a line, the names in the label column
                p.setFont(numbers);
                for (int role = 0; role < HeadRolesView::kRoles; ++role, y += lh)
                    p.drawText(QRect(r.left(), y, r.width(), lh), Qt::AlignRight | Qt::AlignVCenter,
                               scoreText(m_view->score(HeadRolesView::Role(role), l, h)));
            }
            for (int line = 0; !narrow && line < g.textLines; ++line) {
                int x = r.left();
                for (int k = 0; k < 2 && line * 2 + k < HeadRolesView::kRoles; ++k) {
                    const int role = line * 2 + k;
                    p.setFont(role == m_view->m_sort ? bold : font());
                    const QString t =
                        QStringLiteral("%1 %2").arg(QString::fromLatin1(shortName(role)),
                                                    scoreText(m_view->score(HeadRolesView::Role(role), l, h)));
                    p.drawText(QRect(x, y, g.scoreW, lh), Qt::AlignLeft | Qt::AlignVCenter, t);
                    x += g.scoreW;
                }
                y += lh;
            }
            p.setFont(font());
            if (g.sorted) { // which head it is, above the thumbnail (on it, it hid the first columns)
                p.setPen(palette().color(QPalette::Text));
                p.drawText(QRect(r.left(), r.top() - g.idLine, r.width(), g.idLine), Qt::AlignLeft | Qt::AlignVCenter,
                           QStringLiteral("L%1 %2").arg(l).arg(m_view->headName(h)));
            }
        }
        if (m_view->m_order.isEmpty()) {
            p.setPen(palette().color(QPalette::Text));
            p.drawText(rect().adjusted(12, 12, -12, -12), Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap,
                       m_view->m_layers ? tr("No head reaches that score.") : QString());
        }
    }

    void contextMenuEvent(QContextMenuEvent *e) override
    {
        for (int i = 0; i < int(m_view->m_order.size()); ++i)
            if (rectFor(i).contains(e->pos())) {
                const auto [l, h] = m_view->m_order[i];
                m_view->m_pointed = {l, h};
                emit m_view->headPointed(l, h, true);
                QMenu menu(this);
                menu.addActions(m_view->headActions(l, h, &menu));
                menu.exec(e->globalPos());
                return;
            }
    }

    // the head under the pointer, said when it changes
    void mouseMoveEvent(QMouseEvent *e) override
    {
        point(m_view->headAt(e->pos()));
        QWidget::mouseMoveEvent(e);
    }
    void leaveEvent(QEvent *e) override
    {
        point({-1, -1});
        QWidget::leaveEvent(e);
    }
    void point(const QPair<int, int> &at)
    {
        if (at == m_view->m_pointed)
            return;
        m_view->m_pointed = at;
        emit m_view->headPointed(at.first, at.second, false);
    }

    void mousePressEvent(QMouseEvent *e) override
    {
        // Shift held: a path drag from this head
        m_view->m_dragSender = e->button() == Qt::LeftButton && (e->modifiers() & Qt::ShiftModifier)
                                   ? m_view->headAt(e->pos())
                                   : qMakePair(-1, -1);
    }

    void mouseReleaseEvent(QMouseEvent *e) override
    {
        if (e->button() != Qt::LeftButton)
            return;
        const auto [l, h] = m_view->headAt(e->pos());
        const QPair<int, int> drag = m_view->m_dragSender, pending = m_view->m_pathSender;
        m_view->m_dragSender = {-1, -1};
        if (drag.first >= 0 && l >= 0 && qMakePair(l, h) != drag) { // dropped on another head
            m_view->pathTo(drag.first, drag.second, l, h);
            return;
        }
        if (pending.first >= 0 && l >= 0) { // the receiver after "Patch path from here…"
            m_view->pathTo(pending.first, pending.second, l, h);
            return;
        }
        if (l >= 0)
            emit m_view->headOpened(l, h);
    }

private:
    HeadRolesView *m_view;
    // what the canvas shows: the layout and each cell as last drawn or asked to be
    Layout m_drawnLayout;
    std::vector<Cell> m_drawn;
    bool m_drawnValid = false;
    int m_cellsPainted = 0;
};

HeadRolesView::HeadRolesView(QWidget *parent) : DeferredView(parent)
{
    m_sortBox = new QComboBox(this);
    m_sortBox->setObjectName(QStringLiteral("headRolesSort"));
    m_sortBox->addItem(tr("layer and head"), -1);
    for (int r = 0; r < kRoles; ++r)
        m_sortBox->addItem(roleName(Role(r)), r);
    m_minBox = new QDoubleSpinBox(this);
    m_minBox->setObjectName(QStringLiteral("headRolesMinimum"));
    m_minBox->setRange(0.0, 1.0);
    m_minBox->setSingleStep(0.05);
    m_minBox->setDecimals(2);
    m_minBox->setEnabled(false);
    m_minBox->setToolTip(tr("While sorting, heads whose score is lower are hidden."));
    // the rows of controls wrap onto more lines where the tab is narrow (~480 px beside both docks,
    // less with larger text): each label stays with its control
    auto *bar = new FlowLayout;
    bar->addWidget(FlowLayout::group({new QLabel(tr("Sort heads by:"), this), m_sortBox}, this));
    bar->addWidget(FlowLayout::group({new QLabel(tr("hide below:"), this), m_minBox}, this));
    m_readingBox = new QComboBox(this);
    m_readingBox->setObjectName(QStringLiteral("headRolesReading"));
    m_readingBox->addItem(tr("the weights"), -1);
    for (int r = 0; r <= kRetrieval; ++r)
        m_readingBox->addItem(readingName(r), r);
    m_readingBox->setToolTip(tr("What each thumbnail shows: the head's weights, or one reading of them as a colour and a number"));
    m_spanFrom = new QSpinBox(this);
    m_spanFrom->setObjectName(QStringLiteral("headRolesSpanFrom"));
    m_spanTo = new QSpinBox(this);
    m_spanTo->setObjectName(QStringLiteral("headRolesSpanTo"));
    for (QSpinBox *b : {m_spanFrom, m_spanTo}) {
        b->setRange(0, 0);
        b->setToolTip(tr("Span mass: the tokens from the first number up to (not including) the second"));
    }
    m_corpusButton = new QPushButton(tr("Over a corpus…"), this);
    m_corpusButton->setObjectName(QStringLiteral("headRolesCorpus"));
    m_corpusButton->setToolTip(tr("The scores averaged over a text file of prompts, one a line (as `attnviz heads --corpus`)"));
    bar->addWidget(m_corpusButton);
    auto *needle = new QPushButton(tr("Needle probe…"), this);
    needle->setObjectName(QStringLiteral("headRolesNeedle"));
    needle->setToolTip(tr("Hide a sentence in a long text, ask for it, and score each head's retrieval (Wu et al. 2024)"));
    bar->addWidget(needle);
    connect(needle, &QPushButton::clicked, this, &HeadRolesView::needleRequested);
    connect(m_corpusButton, &QPushButton::clicked, this, [this] {
        if (m_corpus)
            setCorpus(nullptr, nullptr, QString());
        else
            emit corpusRequested();
    });
    // the thumbnails' row, with a long text's progress and Cancel (stopped: Compute again) at its end
    auto *readingBar = new FlowLayout;
    readingBar->addWidget(FlowLayout::group({new QLabel(tr("Thumbnails:"), this), m_readingBox}, this));
    readingBar->addWidget(FlowLayout::group({new QLabel(tr("span:"), this), m_spanFrom, new QLabel(QStringLiteral("–"), this), m_spanTo}, this));
    m_useSelection = new QPushButton(tr("Use selection as span"), this);
    m_useSelection->setObjectName(QStringLiteral("headRolesUseSelection"));
    m_useSelection->setEnabled(false);
    m_useSelection->setToolTip(tr("Select tokens first: drag across the chips, or select words in the text"));
    connect(m_useSelection, &QPushButton::clicked, this, &HeadRolesView::useSelectionAsSpan);
    readingBar->addWidget(m_useSelection);
    m_note = new QLabel(this);
    m_note->setWordWrap(true);
    m_note->setObjectName(QStringLiteral("headRolesNote"));
    m_readingsPool = new QThreadPool(this);
    m_readingsPool->setMaxThreadCount(1);
    // a long text's readings: the layers read, and Cancel (stopped: "Compute again")
    m_progress = new QProgressBar(this);
    m_progress->setObjectName(QStringLiteral("headRolesProgress"));
    m_progress->setMaximumWidth(160);
    m_progress->setFormat(tr("%v of %m layers"));
    m_progress->setVisible(false);
    m_cancel = new QPushButton(this);
    m_cancel->setObjectName(QStringLiteral("headRolesCancel"));
    m_cancel->setVisible(false);
    connect(m_cancel, &QPushButton::clicked, this, [this] {
        if (m_computing && m_stop) { // the layers read come back, the rest stay grey
            m_stop->store(true);
            m_cancel->setEnabled(false);
        } else if (m_stopped && m_snapshot && m_snapshot->hasResult() && m_snapshot->longText) {
            computeLong();
        }
    });
    readingBar->addWidget(m_progress);
    readingBar->addWidget(m_cancel);
    // the note scrolls with the grid, above it: a long text's note, stopped and norm-weighted, is
    // 18 lines in a 480 px tab with larger text, more than a short tab has beside the controls
    m_scroll = new QScrollArea(this);
    m_scroll->setWidgetResizable(true); // as wide as the view, wider where the grid is; its height follows the note's lines
    auto *content = new QWidget(m_scroll);
    content->setObjectName(QStringLiteral("headRolesContent"));
    m_canvas = new HeadRolesCanvas(this, content);
    auto *column = new QVBoxLayout(content);
    column->setContentsMargins(0, 0, 0, 0);
    column->setSpacing(0);
    m_note->setContentsMargins(6, 4, 6, 4);
    column->addWidget(m_note);
    column->addWidget(m_canvas, 1);
    m_scroll->setWidget(content);
    auto *layout = new QVBoxLayout(this);
    layout->addLayout(bar);
    layout->addLayout(readingBar);
    layout->addWidget(m_scroll, 1);
    connect(m_sortBox, &QComboBox::currentIndexChanged, this,
            [this] { setSortRole(m_sortBox->currentData().toInt()); });
    connect(m_minBox, &QDoubleSpinBox::valueChanged, this, &HeadRolesView::setMinimum);
    connect(m_readingBox, &QComboBox::currentIndexChanged, this, [this] { setReading(m_readingBox->currentData().toInt()); });
    auto spanEdited = [this] { setSpan(m_spanFrom->value(), m_spanTo->value()); };
    connect(m_spanFrom, &QSpinBox::valueChanged, this, spanEdited);
    connect(m_spanTo, &QSpinBox::valueChanged, this, spanEdited);
}

HeadRolesView::~HeadRolesView()
{
    if (m_stop)
        m_stop->store(true);
}

QString HeadRolesView::readingName(int reading)
{
    if (reading == kRetrieval)
        return tr("retrieval score (needle probe)");
    switch (HeadReading(reading)) {
    case HeadReading::PreviousToken:
        return tr("previous-token");
    case HeadReading::FirstToken:
        return tr("first-token");
    case HeadReading::SameToken:
        return tr("same-token");
    case HeadReading::Self:
        return tr("self (diagonal)");
    case HeadReading::SinkMass:
        return tr("sink mass (first %1 tokens)").arg(ReadingOptions().sinkTokens);
    case HeadReading::RecentMass:
        return tr("recent mass (last %1 keys)").arg(ReadingOptions().window);
    case HeadReading::Entropy:
        return tr("entropy (nats)");
    case HeadReading::SpanMass:
        return tr("span mass");
    }
    return tr("the weights");
}

int HeadRolesView::shownReading() const
{
    if (m_reading < 0 && m_snapshot && m_snapshot->longText)
        return int(HeadReading::SinkMass);
    return m_reading;
}

double HeadRolesView::readingValue(int layer, int head) const
{
    const Mat<double> &m = m_readingScores;
    if (shownReading() < 0 || layer < 0 || head < 0 || layer >= m.rows() || head >= m.cols())
        return std::numeric_limits<double>::quiet_NaN();
    return m(layer, head);
}

void HeadRolesView::setReading(int reading)
{
    reading = std::clamp(reading, -1, m_retrieval ? kRetrieval : int(HeadReading::SpanMass));
    if (m_readingBox->currentData().toInt() != reading)
        m_readingBox->setCurrentIndex(reading + 1); // comes back here through the signal
    if (reading == m_reading)
        return;
    m_reading = reading;
    rebuild();
}

void HeadRolesView::setSpan(int begin, int end)
{
    if (m_spanFrom->value() != begin || m_spanTo->value() != end) {
        const QSignalBlocker a(m_spanFrom), b(m_spanTo);
        m_spanFrom->setValue(begin);
        m_spanTo->setValue(end);
    }
    begin = m_spanFrom->value();
    end = m_spanTo->value();
    if (begin == m_spanBegin && end == m_spanEnd)
        return;
    m_spanBegin = begin;
    m_spanEnd = end;
    announceSpan();
    if (shownReading() == int(HeadReading::SpanMass))
        rebuild();
}

void HeadRolesView::announceSpan()
{
    const bool needle = m_retrieval && m_spanBegin == m_retrieval->needleBegin && m_spanEnd == m_retrieval->needleEnd;
    if (m_spanBegin == m_saidBegin && m_spanEnd == m_saidEnd && needle == m_saidNeedle)
        return;
    m_saidBegin = m_spanBegin;
    m_saidEnd = m_spanEnd;
    m_saidNeedle = needle;
    emit spanChanged(m_spanBegin, m_spanEnd, needle);
}

void HeadRolesView::setSelectedTokens(int begin, int end)
{
    m_selected = end > begin && begin >= 0 ? qMakePair(begin, end) : qMakePair(-1, -1);
    m_useSelection->setEnabled(m_selected.first >= 0);
    m_useSelection->setToolTip(m_selected.first >= 0
                                   ? tr("Span mass over tokens %1–%2").arg(m_selected.first).arg(m_selected.second - 1)
                                   : tr("Select tokens first: drag across the chips, or select words in the text"));
}

void HeadRolesView::useSelectionAsSpan()
{
    if (m_selected.first < 0)
        return;
    setSpan(m_selected.first, m_selected.second);
    setReading(int(HeadReading::SpanMass));
}

void HeadRolesView::showReadingChoice()
{
    // a long text has no weights to draw: the chooser names the reading drawn in their place
    const bool longText = m_snapshot && m_snapshot->hasResult() && m_snapshot->longText;
    if (auto *model = qobject_cast<QStandardItemModel *>(m_readingBox->model())) {
        if (QStandardItem *weights = model->item(0)) {
            weights->setEnabled(!longText);
            weights->setToolTip(longText ? tr("A long text's thumbnails would need every head's t × t weights") : QString());
        }
        if (QStandardItem *retrieval = model->item(kRetrieval + 1)) {
            retrieval->setEnabled(bool(m_retrieval));
            retrieval->setToolTip(m_retrieval ? QString() : tr("Run the needle probe first (“Needle probe…”)"));
        }
    }
    const QSignalBlocker block(m_readingBox);
    m_readingBox->setCurrentIndex(shownReading() + 1);
}

QString HeadRolesView::readingNote() const
{
    const int reading = shownReading();
    if (reading < 0 || !m_snapshot)
        return QString();
    const int t = m_snapshot->tq();
    QString n = tr("Each thumbnail's colour and number: the head's %1.").arg(readingName(reading));
    if (reading == kRetrieval) {
        const NeedleProbe &p = *m_retrieval;
        n += QLatin1Char(' ') +
             tr("On the probe's text (%L1 tokens, the needle at tokens %2–%3), asked for %n answer tokens (answer “%4”, %5 "
                "of them from the needle): the share of the needle's tokens the head copied, a copy being an answer token "
                "whose most-attended prompt token is that very token in the needle (Wu et al. 2024).",
                nullptr, int(p.answer.size()))
                 .arg(p.promptTokens)
                 .arg(p.needleBegin)
                 .arg(p.needleEnd - 1)
                 .arg(QString::fromStdString(p.answerText).simplified())
                 .arg(p.answerFromNeedle);
        return n;
    }
    switch (HeadReading(reading)) {
    case HeadReading::SinkMass:
        n += QLatin1Char(' ') + tr("Mean over queries of the weight on the first %1 tokens (StreamingLLM's attention sinks, "
                                   "Xiao et al. 2023).").arg(ReadingOptions().sinkTokens);
        break;
    case HeadReading::RecentMass:
        n += QLatin1Char(' ') + tr("Mean over queries of the weight on the %1 keys ending at the query itself.")
                                    .arg(ReadingOptions().window);
        break;
    case HeadReading::Entropy:
        n += QLatin1Char(' ') + (m_readingRows < t - 1
                                     ? tr("Mean row entropy in nats over %L1 evenly spaced query rows of %L2 (Clark et al. 2019).")
                                           .arg(m_readingRows)
                                           .arg(t)
                                     : tr("Mean row entropy in nats over every query row (Clark et al. 2019)."));
        break;
    case HeadReading::SpanMass:
        n += QLatin1Char(' ') + (m_spanEnd > m_spanBegin
                                     ? tr("Mean over the queries after tokens %1–%2 of their weight on them.")
                                           .arg(m_spanBegin)
                                           .arg(m_spanEnd - 1)
                                     : tr("Set the span's tokens in the fields above."));
        break;
    case HeadReading::SameToken:
        if (m_readingRows > 0)
            n += QLatin1Char(' ') + tr("Over %L1 of the queries whose token came before (every such query past 16 × t pairs "
                                       "would read too many cells).").arg(m_readingRows);
        break;
    default:
        break;
    }
    return n;
}

void HeadRolesView::paintReading()
{
    m_thumbs.clear();
    const Mat<double> &m = m_readingScores;
    const bool ok = m.rows() == m_layers && m.cols() == m_heads;
    double top = 1.0; // masses and shares: 0–1; entropy: up to the largest
    if (ok && HeadReading(shownReading()) == HeadReading::Entropy) {
        top = 1e-9;
        for (Eigen::Index k = 0; k < m.size(); ++k)
            if (std::isfinite(m.data()[k]))
                top = std::max(top, m.data()[k]);
    }
    m_thumbScale = top;
    QCPColorGradient g = weightsGradient();
    for (int l = 0; l < m_layers; ++l)
        for (int h = 0; h < m_heads; ++h) {
            QImage img(1, 1, QImage::Format_RGB32);
            const double v = ok ? m(l, h) : std::numeric_limits<double>::quiet_NaN();
            img.setPixel(0, 0, std::isfinite(v) ? g.color(v, QCPRange(0.0, top)) : qRgb(200, 200, 200));
            m_thumbs.push_back(img);
        }
}

void HeadRolesView::dropLongReadings()
{
    ++m_generation; // what comes back from a job asked before is not shown
    m_computing = false;
    m_stopped = false;
    m_readingsWait = false;
    m_layersRead = 0;
    if (m_stop)
        m_stop->store(true); // and it stops between layers (norm-weighted: within one)
    showProgress();
}

void HeadRolesView::showProgress()
{
    m_progress->setVisible(m_computing && m_progressShown);
    m_cancel->setVisible((m_computing && m_progressShown) || m_stopped);
    m_cancel->setEnabled(!m_computing || !m_stop || !m_stop->load());
    m_cancel->setText(m_stopped ? tr("Compute again") : tr("Cancel"));
    m_cancel->setToolTip(m_stopped ? tr("Read every head again (the layers not read are grey)")
                                   : tr("Stop reading the heads; the layers read so far stay drawn"));
    const int layers = std::max(1, m_layers);
    m_progress->setRange(0, layers);
    m_progress->setValue(std::min(m_layersRead, layers));
}

void HeadRolesView::setTraceComputing(bool busy)
{
    m_traceComputing = busy;
    if (busy && m_computing) { // the prefill has the pool; the readings start again once it is done
        dropLongReadings();
        m_readingsWait = true;
    } else if (!busy && m_readingsWait) {
        // after the new snapshot, where one comes with the end (it asks for its own readings); none
        // (its compute cancelled): the readings of the snapshot shown
        QTimer::singleShot(0, this, [this] {
            if (m_readingsWait && !m_traceComputing && m_snapshot && m_snapshot->hasResult() && m_snapshot->longText)
                computeLong();
        });
    }
}

void HeadRolesView::computeLong()
{
    const SnapshotPtr s = m_snapshot;
    dropLongReadings();
    if (m_traceComputing) { // a new trace is on its way; the readings wait for it
        m_readingsWait = true;
        if (s && s->hasResult() && m_pathNote.isEmpty())
            m_note->setText(tr("Long text (%L1 tokens): each head's %2 is read once the text being computed is done.")
                                .arg(s->tq())
                                .arg(readingName(shownReading())));
        return;
    }
    const quint64 generation = m_generation;
    m_computing = true;
    m_progressShown = false;
    // a reading that takes a moment shows how far it is (a quick one does not flash a bar)
    QTimer::singleShot(kProgressDelayMs, this, [this, generation] {
        if (m_generation == generation && m_computing) {
            m_progressShown = true;
            showProgress();
        }
    });
    m_stop = std::make_shared<std::atomic<bool>>(false);
    const std::shared_ptr<std::atomic<bool>> stop = m_stop;
    const std::shared_ptr<const Trace<float>> trace = s->trace;
    const bool weighted = isNormWeighted(*s); // the same trace, read as each query's shares of ‖α·v·W_O‖
    const bool roles = m_rolesOf != trace.get() || m_rolesWeighted != weighted;
    const HeadReading reading = HeadReading(shownReading());
    ReadingOptions o;
    o.spanBegin = m_spanBegin;
    o.spanEnd = m_spanEnd;
    o.normWeighted = weighted;
    o.stop = stop.get();
    QPointer<HeadRolesView> self(this);
    const int t = s->tq();
    o.progress = [self, generation, t, weighted](int done, int layers) {
        QMetaObject::invokeMethod(qApp, [self, generation, t, weighted, done, layers] {
            if (!self || self->m_generation != generation || !self->m_computing)
                return;
            self->m_layersRead = done;
            self->showProgress();
            if (self->m_pathNote.isEmpty())
                self->m_note->setText((weighted ? tr("Long text (%L1 tokens), norm-weighted: summing every row of every head "
                                                     "to read each query's shares, %2 of %3 layers read…")
                                                : tr("Long text (%L1 tokens): reading each head, %2 of %3 layers read…"))
                                          .arg(t)
                                          .arg(done)
                                          .arg(layers));
        }, Qt::QueuedConnection);
    };
    const std::shared_ptr<const NeedleProbe> probe = int(reading) == kRetrieval ? m_retrieval : nullptr;
    // the trace is held by the job; the scores come back on the GUI thread, to this view if it still
    // exists and asked for nothing newer
    m_readingsPool->start([self, trace, roles, reading, o, generation, probe, weighted, stop] {
        // the roles (once a trace) and the reading in one pass: each layer's tiles, and norm-weighted
        // their row sums, made once
        std::vector<HeadReading> asked;
        if (roles)
            asked = {HeadReading::PreviousToken, HeadReading::FirstToken, HeadReading::SameToken, HeadReading::Self};
        if (!probe)
            asked.push_back(reading);
        int rows = 0, read = trace->numLayers();
        ReadingOptions counted = o;
        counted.progress = [&read, &o](int done, int layers) {
            read = done;
            o.progress(done, layers);
        };
        read = asked.empty() ? read : 0;
        std::vector<Mat<double>> got = asked.empty() ? std::vector<Mat<double>>() : headReadings(*trace, asked, counted, &rows);
        const bool stopped = stop->load() && read < trace->numLayers(); // cancelled: `read` layers hold theirs
        std::array<Mat<double>, kRoles> scores;
        if (roles) {
            scores[size_t(Role::PreviousToken)] = std::move(got[0]);
            scores[size_t(Role::FirstToken)] = std::move(got[1]);
            scores[size_t(Role::SameToken)] = std::move(got[2]);
            scores[size_t(Role::Self)] = std::move(got[3]);
        }
        if (probe)
            rows = 0;
        Mat<double> value = probe ? probe->retrieval : std::move(got.back());
        QMetaObject::invokeMethod(
            qApp,
            [self, trace, roles, generation, rows, weighted, stopped, read, scores = std::move(scores),
             value = std::move(value)]() mutable {
                if (!self || self->m_generation != generation || !self->m_snapshot || self->m_snapshot->trace != trace)
                    return;
                self->m_computing = false;
                self->m_stopped = stopped;
                self->m_layersRead = read;
                self->showProgress();
                if (roles) {
                    for (int r = 0; r < kRoles; ++r)
                        if (r != int(Role::Induction))
                            self->m_scores[size_t(r)] = std::move(scores[size_t(r)]);
                    self->m_rolesOf = stopped ? nullptr : trace.get(); // cancelled: computed again when asked
                    self->m_rolesWeighted = weighted;
                }
                self->m_readingScores = std::move(value);
                self->m_readingRows = rows;
                self->paintReading();
                const QString stop = stopped ? tr("Stopped after %1 of %2 layers: the grey heads were not read (Compute "
                                                  "again reads them). ")
                                                   .arg(read)
                                                   .arg(trace->numLayers())
                                             : QString();
                self->m_note->setText(self->m_pathNote.isEmpty()
                                          ? stop +
                                                tr("Long text (%L1 tokens): the weights are computed from q and k where they "
                                                   "are read, so each thumbnail is one reading, not the head's %L1 × %L1 weights. ")
                                                    .arg(self->m_snapshot->tq()) +
                                                (weighted ? tr("Norm-weighted: every reading and score is taken on each "
                                                               "query's shares of ‖α·v·W_O‖ (every row of every head read "
                                                               "to sum it). ")
                                                          : QString()) +
                                                self->readingNote() +
                                                (self->inductionNote().isEmpty() ? QString() : QLatin1Char(' ') + self->inductionNote()) +
                                                (self->m_corpus ? QLatin1Char(' ') + self->corpusNote() : QString())
                                          : self->m_pathNote);
                self->reorder();
            },
            Qt::QueuedConnection);
    });
}

QString HeadRolesView::inductionNote() const
{
    if (!m_snapshot || !m_snapshot->hasResult() || !m_snapshot->trace)
        return QString();
    const Mat<double> &ind = m_scores[size_t(Role::Induction)];
    QStringList layers;
    std::set<int> windows;
    for (int l = 0; l < std::min(int(ind.rows()), m_snapshot->trace->numLayers()); ++l) {
        const int w = m_snapshot->trace->layers[size_t(l)].attention.window;
        if (w > 0 && ind.row(l).array().isNaN().all()) {
            layers << QStringLiteral("L%1").arg(l);
            windows.insert(w);
        }
    }
    if (layers.isEmpty())
        return QString();
    QStringList ws;
    for (int w : windows)
        ws << QString::number(w);
    return tr("No induction score (–) in %1: a sliding window of %2 tokens does not reach back to the probe's first "
              "copy.").arg(layers.join(QStringLiteral(", ")), ws.join(QStringLiteral(" or ")));
}

QString HeadRolesView::roleName(Role role)
{
    switch (role) {
    case Role::PreviousToken:
        return tr("previous-token");
    case Role::FirstToken:
        return tr("first-token (sink)");
    case Role::SameToken:
        return tr("same-token");
    case Role::Induction:
        return tr("induction");
    case Role::Self:
        return tr("self (diagonal)");
    }
    return QString();
}

void HeadRolesView::setSnapshot(SnapshotPtr snapshot)
{
    m_snapshot = std::move(snapshot);
    if (m_corpus && m_snapshot && m_snapshot->hasResult() && m_snapshot->model.get() != m_corpusModel)
        setCorpus(nullptr, nullptr, QString()); // another model's scores
    if (m_retrieval && m_snapshot && m_snapshot->hasResult() && m_snapshot->model.get() != m_retrievalModel)
        setRetrieval(nullptr, nullptr);
    rebuild();
}

void HeadRolesView::setRetrieval(std::shared_ptr<const NeedleProbe> probe, const Model *model)
{
    m_retrieval = std::move(probe);
    m_retrievalModel = m_retrieval ? model : nullptr;
    m_pendingSpan = m_retrieval ? qMakePair(m_retrieval->needleBegin, m_retrieval->needleEnd) : qMakePair(-1, -1);
    if (m_retrieval) {
        setReading(kRetrieval);
    } else if (m_reading == kRetrieval) {
        setReading(-1);
    }
    rebuild();
}

void HeadRolesView::setCorpus(std::shared_ptr<const CorpusHeadScores> scores, const Model *model, const QString &source)
{
    m_corpus = std::move(scores);
    m_corpusModel = m_corpus ? model : nullptr;
    m_corpusSource = m_corpus ? source : QString();
    m_corpusButton->setText(m_corpus ? tr("This text") : tr("Over a corpus…"));
    m_corpusButton->setToolTip(m_corpus ? tr("The scores on the text typed again")
                                        : tr("The scores averaged over a text file of prompts, one a line (as `attnviz heads --corpus`)"));
    rebuild();
}

const CorpusScore *HeadRolesView::corpusScore(Role role) const
{
    if (!m_corpus)
        return nullptr;
    switch (role) {
    case Role::PreviousToken: return &m_corpus->previousToken;
    case Role::FirstToken: return &m_corpus->firstToken;
    case Role::SameToken: return &m_corpus->sameToken;
    case Role::Self: return &m_corpus->self;
    case Role::Induction: return nullptr;
    }
    return nullptr;
}

QString HeadRolesView::corpusNote() const
{
    if (!m_corpus)
        return QString();
    QString note = tr("Previous, first, same and self: means over %n prompts of %1 (%L2 tokens; hover a head for each "
                      "score's spread), not this text's.", nullptr, m_corpus->prompts)
                       .arg(m_corpusSource)
                       .arg(m_corpus->tokens);
    if (m_corpus->cut > 0)
        note += QLatin1Char(' ') + tr("%n prompts were longer than the model reads and were scored on their first tokens.",
                                      nullptr, m_corpus->cut);
    return note;
}

QString HeadRolesView::corpusTip(int layer, int head) const
{
    if (!m_corpus)
        return QString();
    QStringList lines{tr("L%1 %2 over %n prompts:", nullptr, m_corpus->prompts).arg(layer).arg(headName(head))};
    for (int r = 0; r < kRoles; ++r) {
        const CorpusScore *c = corpusScore(Role(r));
        if (!c || layer >= c->mean.rows() || head >= c->mean.cols())
            continue;
        const double mean = c->mean(layer, head), spread = c->spread(layer, head);
        lines << tr("%1 %2 ± %3 (%n prompts)", nullptr, c->count(layer, head))
                     .arg(roleName(Role(r)), scoreText(mean), std::isfinite(spread) ? scoreText(spread) : QStringLiteral("–"));
    }
    return lines.join(QLatin1Char('\n'));
}

void HeadRolesView::setSelection(int layer, int head, int)
{
    if (m_snapshot)
        layer = m_snapshot->layerIndex(layer);
    if (layer == m_selLayer && head == m_selHead)
        return;
    m_selLayer = layer;
    m_selHead = head;
    m_canvas->refresh();
    showSelected();
}

void HeadRolesView::showSelected()
{
    QRect r = thumbnailRect(m_selLayer, m_selHead);
    if (r.isEmpty())
        return;
    // with its scores below, and the head names above the first layer
    r.setBottom(r.bottom() + m_canvas->textLines() * m_canvas->fontMetrics().height());
    if (m_sort < 0 && m_selLayer == 0)
        r.setTop(0);
    // the whole thumbnail and its scores where the view has room for them (the canvas lies under the
    // note); the note too where it fits beside them
    r.translate(m_canvas->pos());
    if (r.bottom() < m_scroll->viewport()->height())
        r.setTop(0);
    const int margin = 12;
    m_scroll->ensureVisible(r.center().x(), r.center().y(), std::min(r.width() / 2 + margin, m_scroll->viewport()->width() / 2),
                            std::min(r.height() / 2 + margin, m_scroll->viewport()->height() / 2));
}

void HeadRolesView::setSortRole(int role)
{
    role = std::clamp(role, -1, kRoles - 1);
    if (m_sortBox->currentData().toInt() != role)
        m_sortBox->setCurrentIndex(role + 1); // comes back here through the signal
    m_sort = role;
    m_minBox->setEnabled(role >= 0);
    reorder();
}

void HeadRolesView::setMinimum(double minimum)
{
    if (std::abs(m_minBox->value() - minimum) > 1e-9)
        m_minBox->setValue(minimum);
    m_minimum = minimum;
    reorder();
}

double HeadRolesView::score(Role role, int layer, int head) const
{
    if (const CorpusScore *c = corpusScore(role))
        return layer < c->mean.rows() && head < c->mean.cols() ? c->mean(layer, head) : std::numeric_limits<double>::quiet_NaN();
    const Mat<double> &m = m_scores[size_t(role)];
    if (layer < 0 || head < 0 || layer >= m.rows() || head >= m.cols())
        return std::numeric_limits<double>::quiet_NaN();
    return m(layer, head);
}

void HeadRolesView::resizeEvent(QResizeEvent *e)
{
    DeferredView::resizeEvent(e);
    m_canvas->relayout(); // sorted heads flow into the new width
}

QWidget *HeadRolesView::canvas() const
{
    return m_canvas;
}

QRect HeadRolesView::thumbnailRect(int layer, int head) const
{
    return m_canvas->rectFor(int(m_order.indexOf(qMakePair(layer, head))));
}

QString HeadRolesView::note() const
{
    return m_note->text();
}

QString HeadRolesView::headName(int head) const
{
    return m_kvGroup > 1 ? QStringLiteral("H%1 · kv %2").arg(head).arg(head / m_kvGroup) : QStringLiteral("H%1").arg(head);
}

QList<QAction *> HeadRolesView::headActions(int layer, int head, QObject *parent)
{
    QList<QAction *> out = headAblationActions(this, m_snapshot, layer, head, layer == m_selLayer && head == m_selHead, parent);
    auto *path = new QAction(tr("Patch path from L%1 H%2…").arg(layer).arg(head), parent);
    path->setObjectName(QStringLiteral("pathFromHereAction"));
    const bool causal = m_snapshot && m_snapshot->fromModel() && m_snapshot->modelInfo.causal &&
                        !m_snapshot->modelInfo.architecture.encoderDecoder;
    path->setEnabled(causal && layer + 1 < m_layers);
    path->setToolTip(!causal ? tr("Path patching runs on decoder-only models")
                     : layer + 1 < m_layers ? tr("Then click the receiver head, in a later layer (or Shift-drag this head onto it)")
                                            : tr("The last layer's heads send to no later head"));
    connect(path, &QAction::triggered, this, [this, layer, head] {
        m_pathSender = {layer, head};
        m_pathNote = tr("Path patching from L%1 H%2: click the receiver head (a later layer); Esc cancels.").arg(layer).arg(head);
        m_note->setText(m_pathNote);
    });
    out << path;
    return out;
}

QPair<int, int> HeadRolesView::headAt(const QPoint &pos) const
{
    return m_canvas->headAt(pos);
}

void HeadRolesView::pathTo(int senderLayer, int senderHead, int layer, int head)
{
    m_pathSender = {-1, -1};
    if (layer <= senderLayer) {
        m_pathNote = tr("A path runs forward: drop L%1 H%2 on a head of a later layer.").arg(senderLayer).arg(senderHead);
        m_note->setText(m_pathNote);
        return;
    }
    m_pathNote.clear();
    rebuild(); // the note back to the scores'
    emit pathPatchRequested(senderLayer, senderHead, layer, head);
}

void HeadRolesView::keyPressEvent(QKeyEvent *e)
{
    if (e->key() == Qt::Key_Escape && m_pathSender.first >= 0) {
        m_pathSender = {-1, -1};
        m_pathNote.clear();
        rebuild();
        return;
    }
    DeferredView::keyPressEvent(e);
}

int HeadRolesView::ablationMarks() const
{
    int n = 0;
    if (m_snapshot)
        for (const auto &[l, h] : m_order)
            n += ablationOf(*m_snapshot, l, h).isEmpty() ? 0 : 1;
    return n;
}

void HeadRolesView::rebuild()
{
    if (deferred())
        return;
    const SnapshotPtr &s = m_snapshot;
    m_layers = m_heads = 0;
    m_thumbs.clear();
    if (!s || !s->hasResult() || s->cross || s->longText) { // no weights drawn: nothing to keep them for
        m_thumbsOf.reset();
        m_weightThumbs.clear();
    }
    const bool keepRoles = s && s->hasResult() && s->longText && m_rolesOf == s->trace.get() &&
                           m_rolesWeighted == isNormWeighted(*s); // computed for this trace, so weighted
    if (!keepRoles)
        for (Mat<double> &m : m_scores)
            m.resize(0, 0);
    if (!s || !s->hasResult() || s->cross) {
        dropLongReadings();
        m_rolesOf = nullptr;
        m_readingScores.resize(0, 0);
        m_note->setText(s && !s->message.isEmpty() ? s->message : tr("Open a model folder to see its heads."));
        reorder();
        return;
    }
    const int t = s->tq();
    for (QSpinBox *b : {m_spanFrom, m_spanTo}) {
        const QSignalBlocker block(b);
        b->setRange(0, t);
    }
    if (m_pendingSpan.second > m_pendingSpan.first && m_pendingSpan.second <= t) { // the probe's text has come
        const QSignalBlocker a(m_spanFrom), b(m_spanTo);
        m_spanFrom->setValue(m_pendingSpan.first);
        m_spanTo->setValue(m_pendingSpan.second);
        m_spanBegin = m_pendingSpan.first;
        m_spanEnd = m_pendingSpan.second;
        m_pendingSpan = {-1, -1};
    }
    announceSpan();
    showReadingChoice();
    if (s->longText) { // no t x t matrix to draw: one reading per head, the scores through AttentionTiles
        const Trace<float> &trace = *s->trace;
        m_layers = trace.numLayers();
        m_heads = trace.numHeads();
        const int kv = m_layers > 0 ? trace.layers.front().attention.kvHeads : 0;
        m_kvGroup = kv > 0 && kv < m_heads ? m_heads / kv : 1;
        m_scores[size_t(Role::Induction)].resize(0, 0);
        if (s->induction && s->induction->rows() == m_layers && s->induction->cols() == m_heads)
            m_scores[size_t(Role::Induction)] = *s->induction;
        m_readingScores.resize(0, 0);
        paintReading();
        m_note->setText(m_pathNote.isEmpty() ? tr("Long text (%L1 tokens): computing each head's %2…").arg(t).arg(readingName(shownReading()))
                                             : m_pathNote);
        m_selLayer = s->layerIndex(m_selLayer);
        reorder();
        computeLong();
        return;
    }
    m_rolesOf = nullptr;
    dropLongReadings();
    const bool normWeighted = isNormWeighted(*s);
    const Trace<float> &trace = *s->trace;
    const Trace<float> scored = normWeighted ? rowShares(trace) : Trace<float>();
    const Trace<float> &scoreOn = normWeighted ? scored : trace;
    m_layers = trace.numLayers();
    m_heads = trace.numHeads();
    const int kv = m_layers > 0 ? trace.layers.front().attention.kvHeads : 0;
    m_kvGroup = kv > 0 && kv < m_heads ? m_heads / kv : 1;
    m_scores[size_t(Role::PreviousToken)] = previousTokenScores(scoreOn);
    m_scores[size_t(Role::FirstToken)] = firstTokenScores(scoreOn);
    m_scores[size_t(Role::SameToken)] = sameTokenScores(scoreOn);
    m_scores[size_t(Role::Self)] = selfScores(scoreOn);
    if (s->induction && s->induction->rows() == m_layers && s->induction->cols() == m_heads)
        m_scores[size_t(Role::Induction)] = *s->induction;
    // one scale for every thumbnail: the weights' 0–1, or 0 to the largest norm-weighted cell
    double top = 1.0;
    if (normWeighted) {
        top = 0.0;
        for (int l = 0; l < m_layers; ++l)
            for (int h = 0; h < m_heads; ++h)
                if (const WeightMatrix<float> &w = trace.weights(l, h); w.size() > 0) // the stored cells (the rest: 0)
                    top = std::max(top, double(Eigen::Map<const Eigen::ArrayXf>(w.data(), w.storedSize())
                                                   .maxCoeff<Eigen::PropagateNumbers>())); // (NaN: a fully masked row)
        top = std::max(top, 1e-9);
    }
    m_thumbScale = top;
    if (m_reading < 0) {
        weightThumbnails(s->trace, top);
        m_thumbs = m_weightThumbs;
    } else { // a reading's colours instead (paintReading below): the weights' images are let go
        m_thumbsOf.reset();
        m_weightThumbs.clear();
    }
    QString note = normWeighted
        ? tr("Each thumbnail is one head's norm-weighted attention ‖α·v·W_O‖ on this text (shared scale 0–%1). Under it: "
             "previous-token, first-token (“sink”), same-token and self (diagonal) scores of each query's shares of it; "
             "induction measured on the weights, on 50 random tokens said twice.")
              .arg(top, 0, 'g', 3)
        : tr("Each thumbnail is one head's weights on this text (shared scale 0–1). Under it: previous-token, "
             "first-token (“sink”), same-token and self (diagonal) scores on this text; induction measured on 50 random tokens "
             "said twice.");
    if (const QString windowed = inductionNote(); !windowed.isEmpty())
        note += QLatin1Char(' ') + windowed;
    if (!s->induction)
        note += QLatin1Char(' ') + (s->inductionProblem.isEmpty()
                                        ? tr("Induction is measured for model folders only.")
                                        : tr("Induction not measured: %1.").arg(s->inductionProblem));
    if (m_layers * m_heads > 0 && s->tq() > kMaxCells && m_reading < 0)
        note += QLatin1Char(' ') + tr("Thumbnails are block-averaged to %1 cells per side.").arg(kMaxCells);
    m_readingScores.resize(0, 0);
    if (m_reading >= 0) { // a reading instead of the weights
        ReadingOptions o;
        o.spanBegin = m_spanBegin;
        o.spanEnd = m_spanEnd;
        m_readingRows = 0;
        m_readingScores = m_reading == kRetrieval                        ? m_retrieval->retrieval
                          : HeadReading(m_reading) == HeadReading::Entropy ? entropyScores(scoreOn, o.entropyRows, &m_readingRows)
                          : HeadReading(m_reading) == HeadReading::SameToken ? sameTokenScores(scoreOn, &m_readingRows)
                                                                              : headReading(scoreOn, HeadReading(m_reading), o);
        if (HeadReading(m_reading) == HeadReading::SameToken) {
            std::set<int> seen;
            int all = 0; // every query whose token came before: no sample to say
            for (const TraceToken &tok : trace.tokens)
                all += seen.insert(tok.id).second ? 0 : 1;
            if (all == m_readingRows)
                m_readingRows = 0;
        }
        paintReading();
        note += QLatin1Char(' ') + readingNote();
    }
    if (m_corpus)
        note += QLatin1Char(' ') + corpusNote();
    m_note->setText(m_pathNote.isEmpty() ? note : m_pathNote);
    m_selLayer = s->layerIndex(m_selLayer);
    reorder();
}

namespace {

// Whether two heads' weights are the same, bit for bit: their thumbnails are then the same image.
bool sameWeights(const WeightMatrix<float> &a, const WeightMatrix<float> &b)
{
    if (a.rows() != b.rows() || a.cols() != b.cols() || a.lower() != b.lower())
        return false;
    const Eigen::Index n = a.lower() ? a.rows() * (a.rows() + 1) / 2 : a.rows() * a.cols(); // the cells stored
    return n <= a.storedSize() && n <= b.storedSize() && std::memcmp(a.data(), b.data(), size_t(n) * sizeof(float)) == 0;
}

} // namespace

void HeadRolesView::weightThumbnails(const std::shared_ptr<const Trace<float>> &trace, double top)
{
    QCPColorGradient g = weightsGradient();
    const size_t n = size_t(m_layers) * size_t(m_heads);
    const Trace<float> *before = m_thumbsOf.get();
    const bool comparable = before && m_weightThumbs.size() == n && before->numLayers() == m_layers &&
                            before->numHeads() == m_heads && m_thumbsTop == top && m_thumbsGradient && *m_thumbsGradient == g;
    m_weightThumbs.resize(n);
    for (int l = 0; l < m_layers; ++l)
        for (int h = 0; h < m_heads; ++h) {
            const WeightMatrix<float> &w = trace->weights(l, h);
            if (comparable && (before == trace.get() || sameWeights(before->weights(l, h), w)))
                continue; // an ablation at layer l leaves the layers before it as they were
            std::unique_ptr<QCPColorMapData> d(colorMapData(w, nullptr, kMaxCells));
            const int nx = d->keySize(), ny = d->valueSize();
            QImage img(nx, ny, QImage::Format_RGB32);
            for (int y = 0; y < ny; ++y)
                for (int x = 0; x < nx; ++x)
                    img.setPixel(x, y, g.color(d->cell(x, y), QCPRange(0.0, top)));
            m_weightThumbs[size_t(l * m_heads + h)] = img;
            ++m_thumbsRendered;
        }
    m_thumbsOf = trace;
    m_thumbsTop = top;
    if (!m_thumbsGradient || !(*m_thumbsGradient == g))
        m_thumbsGradient = std::make_shared<const QCPColorGradient>(g);
}

void HeadRolesView::hideEvent(QHideEvent *e)
{
    // a trace held here could not be computed into again (LiveModels::traceFor): the next rebuild,
    // when shown, makes every thumbnail
    m_thumbsOf.reset();
    m_weightThumbs.clear();
    DeferredView::hideEvent(e);
}

int HeadRolesView::cellsPainted() const
{
    return m_canvas->cellsPainted();
}

void HeadRolesView::reorder()
{
    m_order.clear();
    for (int l = 0; l < m_layers; ++l)
        for (int h = 0; h < m_heads; ++h)
            if (m_sort < 0 || score(Role(m_sort), l, h) >= m_minimum) // NaN never passes
                m_order.push_back({l, h});
    if (m_sort >= 0)
        std::stable_sort(m_order.begin(), m_order.end(), [this](const QPair<int, int> &a, const QPair<int, int> &b) {
            return score(Role(m_sort), a.first, a.second) > score(Role(m_sort), b.first, b.second);
        });
    m_canvas->relayout();
}

} // namespace attnviz::ui
