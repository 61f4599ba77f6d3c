# cmake -DIN=FILE -DOUT=FILE.inc -P KilnEmbedText.cmake
#
# Writes FILE's text as a C++ raw string literal, for #include where a
# string is expected (Kiln's built-in PDL rules, compiled by mlir-pdll at
# build time).
file(READ "${IN}" text)
file(WRITE "${OUT}" "R\"kiln_embedded(${text})kiln_embedded\"\n")
