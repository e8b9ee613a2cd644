// SPDX-License-Identifier: GPL-3.0-or-later
#include "controls/tokenchipsview.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPaintEvent>
#include <QPainter>
#include <QResizeEvent>
#include <QToolTip>

#include <algorithm>

namespace attnviz::ui {

namespace {
constexpr int kPadX = 6, kPadY = 2, kGap = 4;
}

TokenChipsView::TokenChipsView(QWidget *parent)
    : QWidget(parent)
{
    QSizePolicy sp(QSizePolicy::Preferred, QSizePolicy::Preferred);
    sp.setHeightForWidth(true);
    setSizePolicy(sp);
    setMouseTracking(true);
}

void TokenChipsView::setTokens(const QStringList &tokens, const std::vector<uint8_t> &unknown, int totalTokens)
{
    const QStringList oldTokens = m_tokens;
    const std::vector<uint8_t> oldUnknown = m_unknown, oldFlags = m_flags;
    const int oldTotal = m_total;
    m_tokens = tokens.mid(0, kMaxChips);
    m_unknown.assign(unknown.begin(), unknown.begin() + std::min<size_t>(unknown.size(), size_t(m_tokens.size())));
    m_unknown.resize(size_t(m_tokens.size()), 0);
    m_flags.assign(size_t(m_tokens.size()), 0);
    m_trace.clear();
    m_total = totalTokens;
    tokensChanged(oldTokens, oldUnknown, oldFlags, oldTotal);
}

void TokenChipsView::setTraceTokens(const std::vector<TraceToken> &tokens, int totalTokens, Pieces pieces)
{
    const QStringList oldTokens = m_tokens;
    const std::vector<uint8_t> oldUnknown = m_unknown, oldFlags = m_flags;
    const int oldTotal = m_total;
    const size_t n = std::min<size_t>(tokens.size(), kMaxChips);
    m_trace.assign(tokens.begin(), tokens.begin() + std::ptrdiff_t(n));
    m_tokens.clear();
    m_tokens.reserve(qsizetype(n));
    m_unknown.assign(n, 0);
    m_flags.assign(n, 0);
    for (size_t i = 0; i < n; ++i) {
        const TraceToken &t = m_trace[i];
        QString label = QString::fromStdString(t.display);
        uint8_t flags = t.special ? kSpecial : 0;
        const TraceToken *prev = i > 0 ? &m_trace[i - 1] : nullptr;
        // A piece that continues a word: WordPiece's ##, or a byte-level piece of letters that starts
        // where a piece of letters ended, with no space marker of its own (GPT-2's "Ġdidn" + "'t"; not
        // "tired" + "."). Word vectors' tokens (id -1) are words and never continue one.
        const bool wordPiece = pieces == Pieces::WordPiece && label.startsWith(QLatin1String("##")) && label.size() > 2;
        const QString prevLabel = prev ? QString::fromStdString(prev->display) : QString();
        const bool bytePiece = pieces == Pieces::ByteLevel && t.id >= 0 && !label.isEmpty() && !prevLabel.isEmpty()
            && (label.at(0).isLetterOrNumber() || label.at(0) == QLatin1Char('\''))
            && prevLabel.back().isLetterOrNumber();
        if (prev && !t.special && !prev->special && t.begin > 0 && prev->end == t.begin && (wordPiece || bytePiece)
            && t.begin != t.end)
            flags |= kContinues;
        if (wordPiece && (flags & kContinues))
            label = label.mid(2); // the join shows what ## says
        m_tokens << label;
        m_unknown[i] = t.unknown ? 1 : 0;
        m_flags[i] = flags;
    }
    m_total = totalTokens;
    tokensChanged(oldTokens, oldUnknown, oldFlags, oldTotal);
}

void TokenChipsView::measure()
{
    const QFontMetrics fm(font());
    m_widths.resize(size_t(m_tokens.size()));
    for (int i = 0; i < m_tokens.size(); ++i) {
        auto it = m_advance.constFind(m_tokens.at(i));
        if (it == m_advance.constEnd())
            it = m_advance.insert(m_tokens.at(i), fm.horizontalAdvance(m_tokens.at(i)));
        m_widths[size_t(i)] = it.value() + 2 * kPadX;
    }
    if (m_advance.size() > 8 * kMaxChips) // a long session of typing: keep only what is shown
        m_advance.clear();
}

void TokenChipsView::tokensChanged(const QStringList &oldTokens, const std::vector<uint8_t> &oldUnknown,
                                   const std::vector<uint8_t> &oldFlags, int oldTotal)
{
    if (m_selEnd > int(m_tokens.size())) // a selection past the new chips
        setSelectedRange(-1, -1);
    if (m_anchor >= int(m_tokens.size()))
        m_anchor = -1;
    measure();
    const std::vector<QRect> oldRects = m_rects;
    const int height = layoutChips(width(), &m_rects);
    // repaint the chips that moved or changed, and the "+ N more" note when it may have
    QRegion dirty;
    const size_t n = std::max(oldRects.size(), m_rects.size());
    for (size_t i = 0; i < n; ++i) {
        const bool both = i < oldRects.size() && i < m_rects.size();
        if (both && oldRects[i] == m_rects[i] && oldTokens.at(qsizetype(i)) == m_tokens.at(qsizetype(i))
            && oldUnknown[i] == m_unknown[i] && oldFlags[i] == m_flags[i])
            continue;
        if (i < oldRects.size())
            dirty += oldRects[i];
        if (i < m_rects.size())
            dirty += m_rects[i];
    }
    if (oldTotal > int(oldRects.size()) || m_total > int(m_rects.size()) || m_rects.empty() || oldRects.empty()) {
        // the note after the last chip (or the placeholder): its whole row
        for (const std::vector<QRect> *rects : {&oldRects, const_cast<const std::vector<QRect> *>(&m_rects)})
            if (!rects->empty())
                dirty += QRect(0, rects->back().top(), width(), rects->back().height());
        if (m_rects.empty() || oldRects.empty())
            dirty = rect();
    }
    emit chipsLaidOut(height);
    if (height != m_laidOutHeight) {
        m_laidOutHeight = height;
        updateGeometry();
    }
    if (!dirty.isEmpty())
        update(dirty);
}

void TokenChipsView::setPadded(const std::set<int> &padded, bool paddingActive)
{
    if (padded == m_padded && paddingActive == m_paddingActive)
        return;
    m_padded = padded;
    m_paddingActive = paddingActive;
    update();
}

void TokenChipsView::setGeneratedFrom(int index)
{
    if (index == m_generatedFrom)
        return;
    m_generatedFrom = index;
    update();
}

void TokenChipsView::setPlaceholder(const QString &text)
{
    m_placeholder = text;
    update();
}

QRect TokenChipsView::chipRect(int index) const
{
    return index >= 0 && index < int(m_rects.size()) ? m_rects[size_t(index)] : QRect();
}

int TokenChipsView::layoutChips(int width, std::vector<QRect> *rects) const
{
    const QFontMetrics fm(font());
    const int h = fm.height() + 2 * kPadY;
    int x = kGap, y = kGap;
    if (rects) {
        rects->clear();
        rects->reserve(size_t(m_tokens.size()));
    }
    for (int i = 0; i < m_tokens.size(); ++i) {
        const int w = i < int(m_widths.size()) ? m_widths[size_t(i)] : fm.horizontalAdvance(m_tokens.at(i)) + 2 * kPadX;
        if (isContinuation(i) && x > kGap)
            x -= kGap - 1; // against the word it continues, a hairline apart
        if (x + w > width - kGap && x > kGap) {
            x = kGap;
            y += h + kGap;
        }
        if (rects)
            rects->push_back(QRect(x, y, w, h));
        x += w + kGap;
    }
    if (m_total > int(m_tokens.size())) {
        const int w = fm.horizontalAdvance(QStringLiteral("+ 99,999 more tokens")) + 2 * kPadX;
        if (x + w > width - kGap && x > kGap) {
            y += h + kGap;
        }
    }
    return y + h + kGap;
}

int TokenChipsView::heightForWidth(int width) const { return layoutChips(width, nullptr); }

QSize TokenChipsView::sizeHint() const { return QSize(400, heightForWidth(std::max(200, width()))); }

QSize TokenChipsView::minimumSizeHint() const { return QSize(100, fontMetrics().height() + 2 * kPadY + 2 * kGap); }

void TokenChipsView::resizeEvent(QResizeEvent *e)
{
    const int h = layoutChips(width(), &m_rects);
    m_laidOutHeight = h; // what the layout asked heightForWidth() for this width
    if (e->oldSize().width() != width())
        emit chipsLaidOut(h);
}

void TokenChipsView::paintEvent(QPaintEvent *e)
{
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    if (m_tokens.isEmpty()) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(rect().adjusted(kGap, 0, 0, 0), Qt::AlignVCenter | Qt::AlignLeft, m_placeholder);
        return;
    }
    const QRect exposed = e->rect(); // a long text: only the rows in view (the scroll area shows three)
    for (int i = 0; i < int(m_rects.size()); ++i) {
        const QRect r = m_rects[size_t(i)];
        if (!r.intersects(exposed))
            continue;
        const bool unknown = isUnknown(i);
        const bool padded = m_padded.count(i) > 0;
        const bool special = isSpecial(i);
        const bool generated = m_generatedFrom >= 0 && i >= m_generatedFrom;
        QColor fill = padded    ? QColor(225, 225, 225)
                      : special ? QColor(238, 230, 248)
                      : generated ? QColor(220, 242, 220)
                                  : QColor(232, 240, 252);
        QPen pen(unknown ? QColor(215, 120, 20) : special ? QColor(130, 90, 170) : QColor(120, 150, 200),
                 unknown ? 1.5 : 1.0);
        if (unknown) {
            pen.setStyle(Qt::DashLine);
            pen.setCapStyle(Qt::FlatCap); // square caps would stick out of the rect where a dash ends on a corner
        }
        p.setPen(pen);
        p.setBrush(fill);
        // The outline inside the chip's rect, inset by half the pen: a keystroke repaints only the
        // chips that changed, clipped to their rects, so a stroke that spilled past the rect would
        // leave its antialiased fringe on screen differently from a full render.
        if (i >= m_selBegin && i < m_selEnd) { // selected: the highlight's colour, drawn thicker
            pen = QPen(palette().color(QPalette::Highlight), 2.5);
            p.setPen(pen);
        }
        const qreal inset = pen.widthF() / 2;
        p.drawRoundedRect(QRectF(r).adjusted(inset, inset, -inset, -inset), 5, 5);
        QFont f = font();
        f.setStrikeOut(padded);
        f.setItalic(special);
        p.setFont(f);
        p.setPen(padded ? QColor(130, 130, 130)
                        : (unknown ? QColor(160, 80, 0) : special ? QColor(85, 40, 120) : QColor(20, 40, 80)));
        p.drawText(r, Qt::AlignCenter, m_tokens.at(i));
        if (padded && !m_paddingActive) {
            p.setPen(QColor(150, 150, 150));
        }
    }
    if (m_total > int(m_tokens.size())) {
        p.setFont(font());
        p.setPen(palette().color(QPalette::PlaceholderText));
        const QRect last = m_rects.back();
        p.drawText(QRect(last.right() + kGap + 2, last.top(), 400, last.height()), Qt::AlignVCenter | Qt::AlignLeft,
                   QStringLiteral("+ %L1 more tokens").arg(m_total - int(m_tokens.size())));
    }
}

bool TokenChipsView::event(QEvent *e)
{
    if (e->type() != QEvent::ToolTip)
        return QWidget::event(e);
    auto *help = static_cast<QHelpEvent *>(e);
    for (int i = 0; i < int(m_rects.size()); ++i) {
        const TraceToken *t = chipToken(i);
        if (!t || !m_rects[size_t(i)].contains(help->pos()))
            continue;
        QString tip = t->id >= 0 ? tr("%1 · id %2").arg(QString::fromStdString(t->text)).arg(t->id)
                                 : QString::fromStdString(t->text);
        if (t->special)
            tip += tr(" · added by the tokenizer");
        else if (isContinuation(i))
            tip += tr(" · continues the word before it");
        if (m_generatedFrom >= 0 && i >= m_generatedFrom)
            tip += tr(" · generated");
        QToolTip::showText(help->globalPos(), tip, this, m_rects[size_t(i)]);
        return true;
    }
    QToolTip::hideText();
    e->ignore();
    return true;
}

int TokenChipsView::chipAt(const QPoint &pos) const
{
    for (int i = 0; i < int(m_rects.size()); ++i)
        if (m_rects[size_t(i)].contains(pos))
            return i;
    return -1;
}

void TokenChipsView::setSelectedRange(int begin, int end)
{
    begin = std::clamp(begin, -1, int(m_tokens.size()));
    end = std::clamp(end, -1, int(m_tokens.size()));
    if (begin < 0 || end <= begin)
        begin = end = -1;
    if (begin == m_selBegin && end == m_selEnd)
        return;
    m_selBegin = begin;
    m_selEnd = end;
    update();
    emit rangeSelected(begin, end);
}

void TokenChipsView::mousePressEvent(QMouseEvent *e)
{
    m_pressed = e->button() == Qt::LeftButton ? chipAt(e->pos()) : -1;
    QWidget::mousePressEvent(e);
}

void TokenChipsView::mouseReleaseEvent(QMouseEvent *e)
{
    const int pressed = m_pressed;
    m_pressed = -1;
    if (!m_clickable || e->button() != Qt::LeftButton)
        return;
    const int at = chipAt(e->pos());
    if (at < 0)
        return;
    if (pressed >= 0 && pressed != at) { // a drag across chips: the tokens between, both ends in
        setSelectedRange(std::min(pressed, at), std::max(pressed, at) + 1);
        return;
    }
    if ((e->modifiers() & Qt::ShiftModifier) && m_anchor >= 0) {
        setSelectedRange(std::min(m_anchor, at), std::max(m_anchor, at) + 1);
        return;
    }
    m_anchor = at;
    setSelectedRange(-1, -1);
    emit tokenClicked(at);
}

void TokenChipsView::mouseMoveEvent(QMouseEvent *e)
{
    const int at = chipAt(e->pos());
    if (at != m_hovered) {
        m_hovered = at;
        emit tokenHovered(at);
    }
    QWidget::mouseMoveEvent(e);
}

void TokenChipsView::changeEvent(QEvent *e)
{
    QWidget::changeEvent(e);
    if (e->type() == QEvent::FontChange) {
        m_advance.clear();
        m_laidOutHeight = -1;
        tokensChanged(m_tokens, m_unknown, m_flags, m_total);
        update();
    }
}

void TokenChipsView::leaveEvent(QEvent *e)
{
    if (m_hovered != -1) {
        m_hovered = -1;
        emit tokenHovered(-1);
    }
    QWidget::leaveEvent(e);
}

} // namespace attnviz::ui
