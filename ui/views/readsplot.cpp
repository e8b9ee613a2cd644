// SPDX-License-Identifier: GPL-3.0-or-later
#include "views/readsplot.h"

#include "style/plotstyle.h"
#include "views/plotfit.h"

#include <qcustomplot.h>

#include <QToolTip>

namespace attnviz::ui {

TitledPlot titledPlot(QCustomPlot *plot, QWidget *owner, const QString &first, const QString *full, double share)
{
    plot->setMouseTracking(true);
    plot->plotLayout()->clear();
    TitledPlot t;
    t.title = new QCPTextElement(plot, first, QFont(owner->font().family(), 10, QFont::Bold));
    plot->plotLayout()->addElement(0, 0, t.title);
    QCPTextElement *title = t.title;
    relabelAfterLayout(plot, owner, [plot, title, full, share] {
        const QString s = full->isEmpty() ? title->text() : fittedTitle(plot, title, *full, share);
        if (s == title->text())
            return false;
        title->setText(s);
        return true;
    });
    t.row = new QCPLayoutGrid;
    plot->plotLayout()->addElement(1, 0, t.row);
    plot->plotLayout()->setRowStretchFactors({0.01, 1.0});
    return t;
}

QSharedPointer<QCPAxisTicker> wholeNumberTicker()
{
    QSharedPointer<QCPAxisTickerFixed> t(new QCPAxisTickerFixed);
    t->setTickStep(1);
    t->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    return t;
}

void cellInteraction(QCustomPlot *plot, QWidget *owner, std::function<bool(const QPointF &, int &, int &)> cellAt,
                     std::function<QString(int, int)> text, std::function<void(int, int)> clicked)
{
    QObject::connect(plot, &QCustomPlot::mouseMove, owner, [plot, cellAt, text](QMouseEvent *e) {
        int r = 0, c = 0;
        if (cellAt(e->position(), r, c))
            QToolTip::showText(e->globalPosition().toPoint(), text(r, c), plot);
        else
            QToolTip::hideText();
    });
    QObject::connect(plot, &QCustomPlot::mouseRelease, owner, [cellAt, clicked](QMouseEvent *e) {
        int r = 0, c = 0;
        if (cellAt(e->position(), r, c))
            clicked(r, c);
    });
}

} // namespace attnviz::ui
