// SPDX-License-Identifier: GPL-3.0-or-later
// A lesson exported as slides (File ▸ Export lesson as slides…, `attnviz export --preset ID --slides
// DIR`): the window opens the lesson in presentation mode (its theme and text sizes) and makes one
// slide per pipeline step when the lesson is about the pipeline, else one of the view it opens on
// followed by one per pipeline step for the same head and query (none where the pipeline cannot
// show the model or the text yet). A slide is the view alone: the
// lesson's title and the slide's in a band, the view's figure (one pipeline stage) at the slide's
// full width, the stage's caption under it; never the window's menus, docks or other stages. Each
// slide is a PNG; the PDF holds them all, one page each, in order.
#pragma once

#include <QSize>
#include <QString>
#include <QStringList>

namespace attnviz::ui {

class MainWindow;

struct SlideOptions {
    QSize size{1920, 1080}; // the projector's screen
    bool png = true;
    bool pdf = true;
};

struct Slide {
    QString name;  // file name part: "01-weights", "03-step-3-keys"
    QString title; // what it shows: "Weights", "Step 3 of 11: Keys K"
};

// Writes the slides of preset `presetId` into `dir` (made when missing) and returns the files written,
// slides first, the PDF last; on failure (an unknown preset, a lesson this build cannot show, a file
// that cannot be written) nothing more is written and `error` says why. The window is left as it
// was opened for the lesson, presentation mode off. `slides`, when given, receives what each shows.
QStringList writeLessonSlides(MainWindow &window, const QString &presetId, const QString &dir,
                              const SlideOptions &options, QString *error, QList<Slide> *slides = nullptr);

} // namespace attnviz::ui
