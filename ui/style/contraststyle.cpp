// SPDX-License-Identifier: GPL-3.0-or-later
// ContrastStyle: indicator frames and disabled sliders drawn so that every theme shows them.
#include "style/contraststyle.h"

#include "style/legibility.h"

#include <QApplication>
#include <QPainter>
#include <QStyleFactory>
#include <QStyleOption>

namespace attnviz::ui {

void ContrastStyle::drawPrimitive(PrimitiveElement pe, const QStyleOption *opt, QPainter *p, const QWidget *w) const
{
    QProxyStyle::drawPrimitive(pe, opt, p, w);
    if (pe != PE_IndicatorCheckBox && pe != PE_IndicatorRadioButton && pe != PE_IndicatorItemViewItemCheck)
        return;
    // the base style's frame is the window colour darkened: where that does not stand out from the
    // window (a black window), the frame is drawn again in the text colour of the widget's state
    const QColor window = opt->palette.color(QPalette::Window);
    if (contrastRatio(window, window.darker(140)) >= 1.5)
        return;
    const bool enabled = opt->state & State_Enabled;
    p->save();
    p->setRenderHint(QPainter::Antialiasing, pe == PE_IndicatorRadioButton);
    p->setPen(QPen(opt->palette.color(enabled ? QPalette::Active : QPalette::Disabled, QPalette::WindowText), 1));
    p->setBrush(Qt::NoBrush);
    const QRectF r = QRectF(opt->rect).adjusted(0.5, 0.5, -0.5, -0.5);
    if (pe == PE_IndicatorRadioButton)
        p->drawEllipse(r);
    else
        p->drawRect(r);
    p->restore();
}

void ContrastStyle::drawComplexControl(ComplexControl cc, const QStyleOptionComplex *opt, QPainter *p, const QWidget *w) const
{
    if (cc == CC_Slider && !(opt->state & State_Enabled)) {
        if (const auto *slider = qstyleoption_cast<const QStyleOptionSlider *>(opt)) {
            // the filled part of the groove in the disabled text colour, not the highlight
            QStyleOptionSlider grey(*slider);
            const QColor off = grey.palette.color(QPalette::Disabled, QPalette::WindowText);
            for (auto group : {QPalette::Active, QPalette::Inactive, QPalette::Disabled})
                grey.palette.setColor(group, QPalette::Highlight, off);
            QProxyStyle::drawComplexControl(cc, &grey, p, w);
            return;
        }
    }
    QProxyStyle::drawComplexControl(cc, opt, p, w);
}

void ContrastStyle::install()
{
    if (!qApp || qobject_cast<ContrastStyle *>(QApplication::style()))
        return;
    // a base of its own: QApplication::setStyle deletes the style in use
    QStyle *base = QStyleFactory::create(QApplication::style()->name());
    QApplication::setStyle(new ContrastStyle(base));
}

} // namespace attnviz::ui
