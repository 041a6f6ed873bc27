# Compile checks without code generation (-fsyntax-only), for sources that no target of
# the build compiles: the per-header self-containment check and programs left out of the
# test build (tests/CMakeLists.txt).
#
# Most of these sources read the same few costly headers first. A check compiles each such
# base once, precompiled, and compiles a source after the first base (in the order given)
# that the source reaches through includes outside any #if. That is the same check as
# compiling the source from nothing: the base is read either way before the source's own
# code, because the source's includes open it and includes come before code
# (tests/layout checks that of every header), and the other headers it reads are read
# either way, each checked on its own. A base the source is the check of is checked by
# its precompilation, which compiles that header from nothing.

# The rlflow headers `file` (a path under `root`, or an absolute path) includes outside
# any #if, in `out`.
function(_rlflow_direct_includes root file out)
  if(IS_ABSOLUTE ${file})
    set(path ${file})
  else()
    set(path ${root}/${file})
  endif()
  file(STRINGS ${path} lines REGEX "^[ \t]*#[ \t]*(if|endif|include)")
  set(depth 0)
  set(found)
  foreach(line IN LISTS lines)
    if(line MATCHES "^[ \t]*#[ \t]*if")
      math(EXPR depth "${depth} + 1")
    elseif(line MATCHES "^[ \t]*#[ \t]*endif")
      math(EXPR depth "${depth} - 1")
    elseif(depth EQUAL 0 AND line MATCHES "^[ \t]*#[ \t]*include[ \t]*[<\"](rlflow/[^>\"]+)[>\"]")
      list(APPEND found ${CMAKE_MATCH_1})
    endif()
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

# The rlflow headers `file` reaches through unconditional includes, in `out`. Direct
# includes are read once per configure run and kept in global properties.
function(_rlflow_reached root file out)
  set(pending ${file})
  set(seen)
  while(pending)
    list(POP_FRONT pending next)
    if(next IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${next})
    string(MAKE_C_IDENTIFIER "${next}" id)
    get_property(known GLOBAL PROPERTY rlflow_direct_known_${id})
    if(NOT known)
      set(direct)
      if(IS_ABSOLUTE ${next} OR EXISTS ${root}/${next})
        _rlflow_direct_includes(${root} ${next} direct)
      endif()
      set_property(GLOBAL PROPERTY rlflow_direct_${id} ${direct})
      set_property(GLOBAL PROPERTY rlflow_direct_known_${id} TRUE)
    endif()
    get_property(direct GLOBAL PROPERTY rlflow_direct_${id})
    list(APPEND pending ${direct})
  endwhile()
  list(REMOVE_AT seen 0)  # the file itself
  set(${out} ${seen} PARENT_SCOPE)
endfunction()

# rlflow_syntax_check(prefix ROOT dir BASES headers... SOURCES files...): OBJECT libraries
# prefix_0, prefix_1, ... (not built by `all`) that compile the sources at -fsyntax-only,
# grouped by the base each is compiled after (the first of BASES it reaches; CUDA sources
# and those that reach none, from nothing), and a custom target `prefix` that builds them
# all. Sets `prefix_targets` in the caller to the libraries, for the caller's links and
# flags.
function(rlflow_syntax_check prefix)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "ROOT" "BASES;SOURCES")
  set(groups none ${arg_BASES})
  foreach(group IN LISTS groups)
    set(sources_${group})
  endforeach()
  # Each source's bases, in order, and how many sources reach each first.
  foreach(source IN LISTS arg_SOURCES)
    string(MAKE_C_IDENTIFIER "${source}" id)
    set(reached_${id})
    if(NOT source MATCHES "\\.cu$")
      _rlflow_reached(${arg_ROOT} ${source} headers)
      foreach(base IN LISTS arg_BASES)
        if(base IN_LIST headers)
          list(APPEND reached_${id} ${base})
        endif()
      endforeach()
    endif()
    list(APPEND reached_${id} none)
    list(GET reached_${id} 0 first)
    list(APPEND sources_${first} ${source})
  endforeach()
  # A base that fewer than three sources would be compiled after costs about as much to
  # precompile as it saves (measured: two programs after one base took 6% more CPU than
  # without it): its sources go to their next base that others share, or to none.
  foreach(base IN LISTS arg_BASES)
    list(LENGTH sources_${base} count)
    if(count EQUAL 0 OR count GREATER 2)
      continue()
    endif()
    set(few ${sources_${base}})
    set(sources_${base})
    foreach(source IN LISTS few)
      string(MAKE_C_IDENTIFIER "${source}" id)
      list(REMOVE_ITEM reached_${id} ${base})
      foreach(next IN LISTS reached_${id})
        list(LENGTH sources_${next} others)
        if(next STREQUAL "none" OR others GREATER 0)
          list(APPEND sources_${next} ${source})
          break()
        endif()
      endforeach()
    endforeach()
  endforeach()
  set(targets)
  set(index 0)
  foreach(group IN LISTS groups)
    if(NOT sources_${group})
      continue()
    endif()
    set(target ${prefix}_${index})
    math(EXPR index "${index} + 1")
    add_library(${target} OBJECT EXCLUDE_FROM_ALL ${sources_${group}})
    # The sources only: the precompiled base is compiled in full, as GCC needs.
    set_source_files_properties(${sources_${group}} TARGET_DIRECTORY ${target} PROPERTIES COMPILE_OPTIONS
                                $<$<COMPILE_LANGUAGE:CXX>:-fsyntax-only>)
    if(NOT group STREQUAL "none")
      target_precompile_headers(${target} PRIVATE <${group}>)
    endif()
    list(APPEND targets ${target})
  endforeach()
  add_custom_target(${prefix})
  add_dependencies(${prefix} ${targets})
  set(${prefix}_targets ${targets} PARENT_SCOPE)
endfunction()

# The public headers the header check compiles (paths under include/), in `out`: all but
# detail/ headers and those whose dependency this build lacks (CUDA, MPI).
function(rlflow_checked_headers out)
  file(GLOB_RECURSE headers RELATIVE ${PROJECT_SOURCE_DIR}/include CONFIGURE_DEPENDS
       ${PROJECT_SOURCE_DIR}/include/rlflow/*.hpp)
  list(FILTER headers EXCLUDE REGEX "/detail/")
  if(NOT RLFLOW_CUDA_FOUND)
    list(FILTER headers EXCLUDE REGEX "cudnn_profiler|backend/cublas|cuda_executor")
  endif()
  if(NOT RLFLOW_MPI_FOUND)
    list(FILTER headers EXCLUDE REGEX "mpi_communicator")
  endif()
  set(${out} ${headers} PARENT_SCOPE)
endfunction()

# The benchmark programs' sources (bench/) the benchmark check compiles, in `out`: the
# scale-out ones only with MPI.
function(rlflow_checked_benchmarks out)
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/bench/*.cpp)
  if(NOT RLFLOW_MPI_FOUND)
    list(FILTER sources EXCLUDE REGEX "/scale_out/")
  endif()
  set(${out} ${sources} PARENT_SCOPE)
endfunction()

# RLFLOW_CHECK_COMPILER, the compile checks' C++ compiler (a cache variable, kept once
# set; empty, found again): Clang 16 or later where one is found (clang++-N, newest first, or clang++), else
# this build's. Clang 16 is the first whose C++20 the headers need (lambdas that capture
# structured bindings, libstdc++ 12's ranges). Sets RLFLOW_CHECK_COMPILER_NAME to the
# compiler's name and major version, for the tests' names.
function(rlflow_find_check_compiler)
  if(NOT RLFLOW_CHECK_COMPILER)
    set(chosen ${CMAKE_CXX_COMPILER})
    foreach(name IN ITEMS clang++-20 clang++-19 clang++-18 clang++-17 clang++-16 clang++)
      find_program(rlflow_clang_${name} ${name})
      if(rlflow_clang_${name})
        execute_process(COMMAND ${rlflow_clang_${name}} --version OUTPUT_VARIABLE version ERROR_QUIET)
        if(version MATCHES "clang version ([0-9]+)" AND CMAKE_MATCH_1 GREATER_EQUAL 16)
          set(chosen ${rlflow_clang_${name}})
          break()
        endif()
      endif()
    endforeach()
    set(RLFLOW_CHECK_COMPILER ${chosen} CACHE FILEPATH
        "The C++ compiler of the compile checks (tests/compile_checks): Clang 16 or later where found, else the build's" FORCE)
  endif()
  execute_process(COMMAND ${RLFLOW_CHECK_COMPILER} --version OUTPUT_VARIABLE version ERROR_QUIET)
  get_filename_component(name ${RLFLOW_CHECK_COMPILER} NAME)
  if(version MATCHES "clang version ([0-9]+)")
    set(name "Clang ${CMAKE_MATCH_1}")
  elseif(version MATCHES "\\(GCC\\) ([0-9]+)|^g\\+\\+ [^\n]* ([0-9]+)\\.[0-9]+\\.[0-9]+")
    set(name "GCC ${CMAKE_MATCH_1}${CMAKE_MATCH_2}")
  endif()
  set(RLFLOW_CHECK_COMPILER_NAME ${name} PARENT_SCOPE)
endfunction()
