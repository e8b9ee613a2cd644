// SPDX-License-Identifier: GPL-3.0-or-later
#include "controls/tokenchipsview.h"

#include <QMouseEvent>
#include <QPainter>
#include <QResizeEvent>

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
    m_tokens = tokens.mid(0, kMaxChips);
    m_unknown.assign(unknown.begin(), unknown.begin() + std::min<size_t>(unknown.size(), size_t(m_tokens.size())));
    m_total = totalTokens;
    emit chipsLaidOut(layoutChips(width(), &m_rects));
    updateGeometry();
    update();
}

void TokenChipsView::setPadded(const std::set<int> &padded, bool paddingActive)
{
    m_padded = padded;
    m_paddingActive = paddingActive;
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
    if (rects)
        rects->clear();
    for (const QString &t : m_tokens) {
        const int w = fm.horizontalAdvance(t) + 2 * kPadX;
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
    if (e->oldSize().width() != width())
        emit chipsLaidOut(h);
}

void TokenChipsView::paintEvent(QPaintEvent *)
{
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    if (m_tokens.isEmpty()) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(rect().adjusted(kGap, 0, 0, 0), Qt::AlignVCenter | Qt::AlignLeft, m_placeholder);
        return;
    }
    for (int i = 0; i < int(m_rects.size()); ++i) {
        const QRect r = m_rects[size_t(i)];
        const bool unknown = isUnknown(i);
        const bool padded = m_padded.count(i) > 0;
        QColor fill = padded ? QColor(225, 225, 225) : QColor(232, 240, 252);
        QPen pen(unknown ? QColor(215, 120, 20) : QColor(120, 150, 200), unknown ? 1.5 : 1.0);
        if (unknown)
            pen.setStyle(Qt::DashLine);
        p.setPen(pen);
        p.setBrush(fill);
        p.drawRoundedRect(QRectF(r).adjusted(0.5, 0.5, -0.5, -0.5), 5, 5);
        QFont f = font();
        f.setStrikeOut(padded);
        p.setFont(f);
        p.setPen(padded ? QColor(130, 130, 130) : (unknown ? QColor(160, 80, 0) : QColor(20, 40, 80)));
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

void TokenChipsView::mouseReleaseEvent(QMouseEvent *e)
{
    if (!m_clickable || e->button() != Qt::LeftButton)
        return;
    for (int i = 0; i < int(m_rects.size()); ++i)
        if (m_rects[size_t(i)].contains(e->pos())) {
            emit tokenClicked(i);
            return;
        }
}

void TokenChipsView::mouseMoveEvent(QMouseEvent *e)
{
    int at = -1;
    for (int i = 0; i < int(m_rects.size()); ++i)
        if (m_rects[size_t(i)].contains(e->pos()))
            at = i;
    if (at != m_hovered) {
        m_hovered = at;
        emit tokenHovered(at);
    }
    QWidget::mouseMoveEvent(e);
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
