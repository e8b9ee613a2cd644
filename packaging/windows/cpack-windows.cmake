# SPDX-License-Identifier: GPL-3.0-or-later
# CPack settings for Windows installers, included by packaging/CMakeLists.txt when WIN32.
# Written and reviewed, not built: the project's machines are Debian (packaging/README.md).
#   cpack -G NSIS   -> attnviz-<version>-win64.exe   (NSIS 3)
#   cpack -G WIX    -> attnviz-<version>-win64.msi   (WiX Toolset 3.x)
#   cpack -G ZIP    -> attnviz-<version>-win64.zip   (portable)
# The install tree is bin/attnviz.exe plus what windeployqt put beside it (Qt DLLs, plugins/),
# QCustomPlot's DLL, and share/attnviz/examples.
set(_icon "${ATTNVIZ_ICON_DIR}/attnviz.ico")
set(CPACK_PACKAGE_FILE_NAME "attnviz-${PROJECT_VERSION}-win64")
set(CPACK_RESOURCE_FILE_LICENSE "${CMAKE_CURRENT_SOURCE_DIR}/GPL-3.0.txt")  # WIX makes its RTF from it

# NSIS: Start menu entry (CPACK_PACKAGE_EXECUTABLES), uninstaller, and .attnviz opened by attnviz.
set(CPACK_NSIS_DISPLAY_NAME "attnviz ${PROJECT_VERSION}")
set(CPACK_NSIS_PACKAGE_NAME "attnviz")
set(CPACK_NSIS_MUI_ICON "${_icon}")
set(CPACK_NSIS_MUI_UNIICON "${_icon}")
set(CPACK_NSIS_INSTALLED_ICON_NAME "bin\\\\attnviz.exe")
set(CPACK_NSIS_ENABLE_UNINSTALL_BEFORE_INSTALL ON)
set(CPACK_NSIS_MODIFY_PATH ON)   # offers to put bin\ on PATH so "attnviz compute" works in a shell
set(CPACK_NSIS_EXTRA_INSTALL_COMMANDS [=[
  WriteRegStr HKCR ".attnviz" "" "attnviz.session"
  WriteRegStr HKCR ".attnviz" "Content Type" "application/x-attnviz-session"
  WriteRegStr HKCR "attnviz.session" "" "attnviz session"
  WriteRegStr HKCR "attnviz.session\DefaultIcon" "" "$INSTDIR\bin\attnviz.exe,0"
  WriteRegStr HKCR "attnviz.session\shell\open\command" "" '"$INSTDIR\bin\attnviz.exe" "%1"'
  System::Call 'shell32::SHChangeNotify(i 0x08000000, i 0, p 0, p 0)'
]=])
set(CPACK_NSIS_EXTRA_UNINSTALL_COMMANDS [=[
  DeleteRegKey HKCR ".attnviz"
  DeleteRegKey HKCR "attnviz.session"
  System::Call 'shell32::SHChangeNotify(i 0x08000000, i 0, p 0, p 0)'
]=])

# WiX: a fixed upgrade code so a newer .msi replaces an older one; the patch adds the file type.
set(CPACK_WIX_UPGRADE_GUID "6B0F3C52-9E1D-4B8A-A4F1-2C7D5E9A8B31")
set(CPACK_WIX_PRODUCT_ICON "${_icon}")
set(CPACK_WIX_PROGRAM_MENU_FOLDER "attnviz")
set(CPACK_WIX_PATCH_FILE "${CMAKE_CURRENT_SOURCE_DIR}/windows/wix-patch.xml")
