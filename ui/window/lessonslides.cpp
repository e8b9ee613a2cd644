// SPDX-License-Identifier: GPL-3.0-or-later
// writeLessonSlides: a lesson, step by step, as PNG slides and one PDF.
#include "window/lessonslides.h"

#include "files/figureexport.h"
#include "live/livesession.h"
#include "mainwindow.h"
#include "teaching/presets.h"
#include "views/pipelineview.h"
#include "views/view.h"
#include "window/viewrouter.h"

#include <qcustomplot.h>

#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFont>
#include <QImage>
#include <QFontMetricsF>
#include <QPageSize>
#include <QPainter>
#include <QPalette>
#include <QPdfWriter>
#include <QPixmap>
#include <QRegularExpression>
#include <QTabWidget>
#include <QTextOption>
#include <QThread>
#include <QTimer>

#include <algorithm>
#include <cmath>
#include <functional>

namespace attnviz::ui {

namespace {

// Lets the window compute and draw: until the result of the latest request is in and the views'
// queued replots and layouts have run (or `ms` pass).
bool settle(MainWindow &w, int ms = 30000)
{
    QElapsedTimer clock;
    clock.start();
    while (clock.elapsed() < ms) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
        const SnapshotPtr s = w.session()->snapshot();
        if (s && !w.session()->busy() && s->generation == w.session()->generation())
            break;
        QThread::msleep(5);
    }
    // the replots are queued, and a relabelled plot lays itself out once more
    for (int pass = 0; pass < 6; ++pass) {
        QEventLoop loop;
        QTimer::singleShot(30, &loop, &QEventLoop::quit);
        loop.exec();
    }
    const SnapshotPtr s = w.session()->snapshot();
    return s && s->hasResult();
}

QString slug(const QString &text)
{
    QString s = text.toLower();
    s.replace(QRegularExpression(QStringLiteral("[^a-z0-9]+")), QStringLiteral("-"));
    while (s.startsWith(QLatin1Char('-')))
        s.remove(0, 1);
    while (s.endsWith(QLatin1Char('-')))
        s.chop(1);
    return s.left(40);
}


// One slide: the lesson's title and what this slide shows in a band at the top, the view's figure
// (or, for a view that draws no figure, the view's widget alone) filling the rest at full width,
// and a caption in plain words under it. Nothing of the window around the view: no menus, docks,
// status bar or the stages not being shown.
struct SlideContent {
    QString lesson, title, caption, message; // message: shown instead of a figure (a stage without one)
    QCustomPlot *plot = nullptr;
    QString titleLine; // the configuration (head, layer, model) where the figure's title lacks it
    QWidget *widget = nullptr;
};

QImage composeSlide(const SlideContent &c, const QSize &size, const QPalette &palette, const QFont &windowFont)
{
    QImage slide(size, QImage::Format_ARGB32_Premultiplied);
    const QColor background = palette.color(QPalette::Window), text = palette.color(QPalette::WindowText);
    slide.fill(background);
    const double unit = size.height() / 1080.0; // sizes below are for a 1080-pixel-high slide
    const int margin = int(std::lround(32 * unit));
    QFont small = windowFont, big = windowFont, caption = windowFont;
    small.setPixelSize(std::max(10, int(std::lround(26 * unit))));
    big.setPixelSize(std::max(12, int(std::lround(44 * unit))));
    big.setBold(true);
    caption.setPixelSize(std::max(10, int(std::lround(30 * unit))));
    QPainter p(&slide);
    p.setRenderHint(QPainter::Antialiasing);
    p.setRenderHint(QPainter::TextAntialiasing);
    const int width = size.width() - 2 * margin;
    int y = margin / 2;
    p.setPen(text);
    p.setFont(small);
    const QFontMetricsF smallM(small), bigM(big), captionM(caption);
    p.drawText(QRectF(margin, y, width, smallM.height()), Qt::AlignLeft | Qt::AlignVCenter,
               smallM.elidedText(c.lesson, Qt::ElideRight, width));
    y += int(std::ceil(smallM.height()));
    p.setFont(big);
    p.drawText(QRectF(margin, y, width, bigM.height()), Qt::AlignLeft | Qt::AlignVCenter,
               bigM.elidedText(c.title, Qt::ElideRight, width));
    y += int(std::ceil(bigM.height()));
    if (!c.titleLine.isEmpty()) {
        p.setFont(small);
        p.drawText(QRectF(margin, y, width, smallM.height()), Qt::AlignLeft | Qt::AlignVCenter,
                   smallM.elidedText(c.titleLine, Qt::ElideRight, width));
        y += int(std::ceil(smallM.height()));
    }
    y += margin / 2;

    int bottom = size.height() - margin / 2;
    if (!c.caption.isEmpty()) {
        QTextOption wrap(Qt::AlignLeft | Qt::AlignTop);
        wrap.setWrapMode(QTextOption::WordWrap);
        const QRectF need = captionM.boundingRect(QRectF(0, 0, width, size.height() / 4.0), Qt::TextWordWrap, c.caption);
        const int h = int(std::ceil(std::min(need.height(), size.height() / 4.0)));
        bottom -= h;
        p.setFont(caption);
        p.drawText(QRectF(margin, bottom, width, h), c.caption, wrap);
        bottom -= margin / 2;
    }
    const QRect body(margin, y, width, std::max(16, bottom - y));
    if (c.plot) {
        FigureOptions figure;
        figure.width = body.width();
        figure.height = body.height();
        // the figure's title one line, none of the window's hints (how to zoom); labels keep the
        // presentation's sizes (legibility.h: presenting wins over a publication figure's)
        figure.publication = true;
        p.drawImage(body.topLeft(), renderFigure(c.plot, figure, background));
    } else if (c.widget) {
        const QPixmap shot = c.widget->grab();
        const QSize fit = shot.size().scaled(body.size(), Qt::KeepAspectRatio);
        p.drawPixmap(QRect(QPoint(body.x() + (body.width() - fit.width()) / 2, body.y()), fit), shot);
    } else {
        p.setFont(caption);
        p.drawText(body, Qt::AlignCenter | Qt::TextWordWrap, c.message);
    }
    p.end();
    return slide;
}

} // namespace

QStringList writeLessonSlides(MainWindow &w, const QString &presetId, const QString &dirPath,
                              const SlideOptions &o, QString *error, QList<Slide> *slidesOut)
{
    auto failWith = [error](const QString &message) {
        if (error)
            *error = message;
        return QStringList();
    };
    const Preset *p = findPreset(presetId);
    if (!p)
        return failWith(QStringLiteral("no lesson %1 (`attnviz window --preset list` lists them)").arg(presetId));
    QDir dir(dirPath);
    if (!dir.exists() && !QDir().mkpath(dirPath))
        return failWith(QStringLiteral("%1: cannot make the folder").arg(dirPath));
    if (!w.applyPreset(presetId))
        return failWith(QStringLiteral("the lesson %1 cannot be shown here: %2").arg(presetId, w.statusText()));
    if (!w.isVisible())
        w.show();
    if (!settle(w))
        return failWith(QStringLiteral("the lesson %1 gave no result: %2").arg(presetId, w.statusText()));

    w.setPresentationMode(true);
    // the projector's size, whatever this screen is: presentation's styling, not this screen's full
    // screen (leaving presentation mode restores the window as it was)
    w.setWindowState(w.windowState() & ~Qt::WindowFullScreen);
    w.setGeometry(QRect(QPoint(0, 0), o.size));
    settle(w);

    // what to show, in order: the lesson's own view (unless it is the pipeline), then every step,
    // one stage a slide
    struct Shot {
        Slide slide;
        std::function<SlideContent()> show;
    };
    QList<Shot> shots;
    PipelineView *pipeline = w.pipelineView();
    const QString view = w.currentViewId();
    if (view != QLatin1String("pipeline")) {
        const QString tab = w.tabs()->tabText(w.tabs()->currentIndex()).remove(QLatin1Char('&'));
        shots.push_back({{QString(), tab}, [&w, view, tab] {
                             w.showView(view);
                             SlideContent c;
                             c.title = tab;
                             QWidget *widget = w.viewWidget(view);
                             const auto *v = qobject_cast<const View *>(widget);
                             c.plot = v ? v->plot() : nullptr;
                             c.widget = widget;
                             return c;
                         }});
    }
    // the pipeline's steps where it shows this model and text (not an encoder-decoder model's, not a
    // text past the full weights): otherwise its line, on a slide of its own where the lesson opens on it
    const SnapshotPtr forPipeline = w.views()->snapshotFor(w.session()->snapshot(), QStringLiteral("pipeline"));
    const bool pipelineShows = forPipeline && forPipeline->hasResult();
    if (!pipelineShows && view == QLatin1String("pipeline")) {
        const QString why = forPipeline ? forPipeline->message : QString();
        shots.push_back({{QString(), QStringLiteral("Pipeline")}, [why] {
                             SlideContent c;
                             c.title = QStringLiteral("Pipeline");
                             c.message = why;
                             return c;
                         }});
    }
    if (pipelineShows) {
        w.showView(QStringLiteral("pipeline"));
        settle(w);
    }
    const int n = pipelineShows ? pipeline->stageCount() : 0;
    for (int i = 0; i < n; ++i)
        shots.push_back({{QString(), QStringLiteral("Step %1 of %2: %3").arg(i + 1).arg(n).arg(pipeline->stageName(i))},
                         [&w, pipeline, i, n] {
                             w.showView(QStringLiteral("pipeline"));
                             pipeline->setCurrentStage(i);
                             SlideContent c;
                             c.title = QStringLiteral("Step %1 of %2: %3").arg(i + 1).arg(n).arg(pipeline->stageName(i));
                             c.caption = pipeline->stageCaption(i);
                             c.plot = pipeline->stagePlot(i);
                             c.titleLine = pipeline->stageFigureTitle(i);
                             c.message = pipeline->stageMessage(i);
                             return c;
                         }});

    QStringList written;
    QList<QImage> pages;
    for (int k = 0; k < shots.size(); ++k) {
        Shot &s = shots[k];
        SlideContent content = s.show();
        settle(w, 2000);
        content.lesson = p->title;
        s.slide.name = QStringLiteral("%1-%2").arg(k + 1, 2, 10, QLatin1Char('0')).arg(slug(s.slide.title));
        const QImage shot = composeSlide(content, o.size, w.palette(), w.font());
        pages << shot;
        if (o.png) {
            const QString file = dir.filePath(s.slide.name + QStringLiteral(".png"));
            if (!shot.save(file, "PNG")) {
                w.setPresentationMode(false);
                return failWith(QStringLiteral("%1: cannot write the slide").arg(file));
            }
            written << file;
        }
        if (slidesOut)
            slidesOut->push_back(s.slide);
    }
    w.setPresentationMode(false);

    if (o.pdf && !pages.isEmpty()) {
        // one page per slide, the page the slide's shape; the pictures as taken (the plots are
        // pictures on screen too)
        const QString file = dir.filePath(presetId + QStringLiteral(".pdf"));
        QPdfWriter pdf(file);
        pdf.setResolution(96);
        pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
        pdf.setPageSize(QPageSize(QSizeF(o.size.width() * 72.0 / 96.0, o.size.height() * 72.0 / 96.0), QPageSize::Point));
        pdf.setTitle(p->title);
        pdf.setCreator(QStringLiteral("attnviz"));
        QPainter painter;
        if (!painter.begin(&pdf))
            return failWith(QStringLiteral("%1: cannot write the PDF").arg(file));
        for (int k = 0; k < pages.size(); ++k) {
            if (k > 0)
                pdf.newPage();
            const QRect target(QPoint(0, 0), QSize(pdf.width(), pdf.height()));
            painter.drawImage(target, pages[k]);
        }
        painter.end();
        written << file;
    }
    return written;
}

} // namespace attnviz::ui
