// SPDX-License-Identifier: GPL-3.0-or-later
#include "controls/flowlayout.h"

#include <QHBoxLayout>
#include <QWidget>

#include <algorithm>

namespace attnviz::ui {

FlowLayout::FlowLayout(QWidget *parent, int hSpacing, int vSpacing) : QLayout(parent), m_hSpacing(hSpacing), m_vSpacing(vSpacing)
{
    setContentsMargins(0, 0, 0, 0);
}

FlowLayout::~FlowLayout()
{
    while (QLayoutItem *item = takeAt(0))
        delete item;
}

QWidget *FlowLayout::group(const QList<QWidget *> &widgets, QWidget *parent)
{
    auto *box = new QWidget(parent);
    auto *row = new QHBoxLayout(box);
    row->setContentsMargins(0, 0, 0, 0);
    for (QWidget *w : widgets)
        row->addWidget(w);
    return box;
}

void FlowLayout::addItem(QLayoutItem *item)
{
    m_items.append(item);
}

QLayoutItem *FlowLayout::itemAt(int index) const
{
    return index >= 0 && index < m_items.size() ? m_items.at(index) : nullptr;
}

QLayoutItem *FlowLayout::takeAt(int index)
{
    return index >= 0 && index < m_items.size() ? m_items.takeAt(index) : nullptr;
}

QSize FlowLayout::itemSize(const QLayoutItem *item) const
{
    return item->sizeHint().expandedTo(item->minimumSize());
}

int FlowLayout::heightForWidth(int width) const
{
    return place(QRect(0, 0, width, 0), false);
}

int FlowLayout::lineCount(int width) const
{
    int lines = 0;
    place(QRect(0, 0, width, 0), false, &lines);
    return lines;
}

QSize FlowLayout::minimumSize() const
{
    QSize s(0, 0);
    for (const QLayoutItem *item : m_items)
        if (!item->isEmpty())
            s = s.expandedTo(itemSize(item));
    const QMargins m = contentsMargins();
    return s + QSize(m.left() + m.right(), m.top() + m.bottom());
}

QSize FlowLayout::sizeHint() const
{
    int w = 0, h = 0, n = 0;
    for (const QLayoutItem *item : m_items)
        if (!item->isEmpty()) {
            const QSize s = itemSize(item);
            w += s.width() + (n++ ? m_hSpacing : 0);
            h = std::max(h, s.height());
        }
    const QMargins m = contentsMargins();
    return QSize(w + m.left() + m.right(), h + m.top() + m.bottom());
}

void FlowLayout::setGeometry(const QRect &rect)
{
    QLayout::setGeometry(rect);
    place(rect, true);
}

int FlowLayout::place(const QRect &rect, bool apply, int *lines) const
{
    const QRect area = rect.marginsRemoved(contentsMargins());
    int x = area.x(), y = area.y(), lineH = 0, n = 0;
    // each line's items, centred vertically on the line once its height is known
    QList<QPair<QLayoutItem *, QRect>> line;
    const auto finish = [&] {
        if (apply)
            for (const auto &[item, r] : line)
                item->setGeometry(QRect(QPoint(r.x(), r.y() + (lineH - r.height()) / 2), r.size()));
        line.clear();
    };
    for (QLayoutItem *item : m_items) {
        if (item->isEmpty())
            continue;
        const QSize s = itemSize(item);
        if (!line.isEmpty() && x + s.width() > area.right() + 1) { // no room left on this line
            finish();
            y += lineH + m_vSpacing;
            x = area.x();
            lineH = 0;
        }
        if (line.isEmpty())
            ++n;
        line.append({item, QRect(QPoint(x, y), s)});
        x += s.width() + m_hSpacing;
        lineH = std::max(lineH, s.height());
    }
    finish();
    if (lines)
        *lines = n;
    const QMargins m = contentsMargins();
    return n ? y + lineH - rect.y() + m.bottom() : 0;
}

} // namespace attnviz::ui
