# vipu_python_package(NAME SOURCE_DIR): the Python package NAME, whose *.py
# files are in SOURCE_DIR, copied into <build>/python/NAME by a target
# NAME_python that ALL builds, so that PYTHONPATH=<build>/python imports it
# as the package's install does; and installed where Debian's python3 finds
# it (byte code is python3's to make on the installed machine). Copied rather
# than pointed at the sources, so the build tree behaves as an install does.
function(vipu_python_package name source_dir)
  file(GLOB sources CONFIGURE_DEPENDS ${source_dir}/*.py)
  set(outputs)
  foreach(source ${sources})
    get_filename_component(file ${source} NAME)
    set(output ${CMAKE_BINARY_DIR}/python/${name}/${file})
    add_custom_command(OUTPUT ${output}
                       COMMAND ${CMAKE_COMMAND} -E copy ${source} ${output}
                       DEPENDS ${source}
                       COMMENT "${name} Python package: ${file}")
    list(APPEND outputs ${output})
  endforeach()
  add_custom_target(${name}_python ALL DEPENDS ${outputs})
  install(DIRECTORY ${source_dir} DESTINATION lib/python3/dist-packages
          FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
endfunction()
