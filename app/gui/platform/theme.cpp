#include "theme.hpp"

#include <QApplication>
#include <QPalette>
#include <QStyle>
#include <QStyleFactory>

namespace tf::gui {

void apply_theme(QApplication& app, bool dark) {
  app.setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
  if (!dark) {
    app.setPalette(app.style()->standardPalette());
    return;
  }
  QPalette p;
  const QColor window(0x2e, 0x30, 0x34), base(0x24, 0x26, 0x29), text(0xe6, 0xe6, 0xe6), dim(0x8a, 0x8d, 0x92);
  const QColor accent(0x3d, 0x8e, 0xd8);
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, window.lighter(108));
  p.setColor(QPalette::ToolTipBase, QColor(0x1d, 0x1f, 0x22));
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::PlaceholderText, dim);
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, window.lighter(112));
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, Qt::white);
  p.setColor(QPalette::Light, window.lighter(140));
  p.setColor(QPalette::Midlight, window.lighter(120));
  p.setColor(QPalette::Mid, window.darker(120));
  p.setColor(QPalette::Dark, window.darker(150));
  p.setColor(QPalette::Shadow, Qt::black);
  p.setColor(QPalette::Highlight, accent);
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::Link, accent.lighter(130));
  for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
    p.setColor(QPalette::Disabled, role, dim.darker(130));
  p.setColor(QPalette::Disabled, QPalette::Button, window);
  app.setPalette(p);
  app.setStyleSheet(QStringLiteral(
      "QToolTip { color: #e6e6e6; background: #1d1f22; border: 1px solid #555; padding: 3px; }"
      "QDockWidget::title { padding: 4px 6px; background: #26282b; }"
      "QGroupBox { font-weight: bold; border: 1px solid #43464b; border-radius: 4px; margin-top: 10px; padding-top: 6px; }"
      "QGroupBox::title { subcontrol-origin: margin; left: 8px; padding: 0 3px; }"
      "tf--gui--DeviceCard { background: #34373b; border: 1px solid #45484d; border-radius: 6px; }"));
}

}  // namespace tf::gui
