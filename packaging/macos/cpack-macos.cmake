# SPDX-License-Identifier: GPL-3.0-or-later
# CPack settings for macOS, included by packaging/CMakeLists.txt when APPLE.
# Written and reviewed, not built: the project's machines are Debian (packaging/README.md).
#   cpack -G DragNDrop -> attnviz-<version>-macOS.dmg: attnviz.app (Qt frameworks and plugins put in
#   by macdeployqt through Qt's deploy script), an /Applications link, examples/.
# Signing and notarization are not done here: codesign --deep --options runtime with a Developer ID,
# then xcrun notarytool submit --wait and xcrun stapler staple on the .dmg.
set(CPACK_PACKAGE_FILE_NAME "attnviz-${PROJECT_VERSION}-macOS")
set(CPACK_DMG_VOLUME_NAME "attnviz ${PROJECT_VERSION}")
set(CPACK_DMG_FORMAT UDZO)
set(CPACK_DMG_SLA_USE_RESOURCE_FILE_LICENSE OFF)
set(CPACK_RESOURCE_FILE_LICENSE "${CMAKE_CURRENT_SOURCE_DIR}/GPL-3.0.txt")
set(CPACK_PACKAGE_ICON "${ATTNVIZ_ICON_DIR}/attnviz.icns")
