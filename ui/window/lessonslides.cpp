// SPDX-License-Identifier: GPL-3.0-or-later
// writeLessonSlides: a lesson, step by step, as PNG slides and one PDF.
#include "window/lessonslides.h"

#include "live/livesession.h"
#include "mainwindow.h"
#include "teaching/presets.h"
#include "views/pipelineview.h"

#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QPixmap>
#include <QRegularExpression>
#include <QTabWidget>
#include <QThread>
#include <QTimer>

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

    // what to show, in order: the lesson's own view (unless it is the pipeline), then every step
    struct Shot {
        Slide slide;
        std::function<void()> show;
    };
    QList<Shot> shots;
    PipelineView *pipeline = w.pipelineView();
    const QString view = w.currentViewId();
    if (view != QLatin1String("pipeline"))
        shots.push_back({{QString(), w.tabs()->tabText(w.tabs()->currentIndex())}, [&w, view] { w.showView(view); }});
    w.showView(QStringLiteral("pipeline"));
    settle(w);
    const int n = pipeline->stageCount();
    for (int i = 0; i < n; ++i)
        shots.push_back({{QString(), QStringLiteral("Step %1 of %2: %3").arg(i + 1).arg(n).arg(pipeline->stageName(i))},
                         [&w, pipeline, i] {
                             w.showView(QStringLiteral("pipeline"));
                             pipeline->setCurrentStage(i);
                         }});

    QStringList written;
    QList<QPixmap> pages;
    for (int k = 0; k < shots.size(); ++k) {
        Shot &s = shots[k];
        s.show();
        settle(w, 2000);
        s.slide.name = QStringLiteral("%1-%2").arg(k + 1, 2, 10, QLatin1Char('0')).arg(slug(s.slide.title));
        const QPixmap shot = w.grab();
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
            painter.drawPixmap(target, pages[k]);
        }
        painter.end();
        written << file;
    }
    return written;
}

} // namespace attnviz::ui
