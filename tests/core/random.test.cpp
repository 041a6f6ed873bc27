// Seeds derived from names: the same on every standard library, unlike std::hash.
#include <rlflow/core/random.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>

using namespace rlflow;

TEST_CASE("seed_from_name gives the values of an independent implementation of its hash") {
    // Computed in Python from the definition (splitmix64's finaliser folded over the
    // name's little-endian 8-byte blocks, the zero-padded tail last):
    //   M = 2**64 - 1
    //   def mix64(x):
    //       x = (x + 0x9e3779b97f4a7c15) & M
    //       x = ((x ^ (x >> 30)) * 0xbf58476d1ce4e5b9) & M
    //       x = ((x ^ (x >> 27)) * 0x94d049bb133111eb) & M
    //       return x ^ (x >> 31)
    //   def seed(b):
    //       h, i = mix64(len(b)), 0
    //       while i + 8 <= len(b): h, i = mix64(h ^ int.from_bytes(b[i:i + 8], 'little')), i + 8
    //       return mix64(h ^ int.from_bytes(b[i:] + bytes(8 - len(b) + i), 'little') ^ 0xa5a5a5a5a5a5a5a5)
    // Pinned values, not std::hash's: those differ between libstdc++ and libc++.
    CHECK(seed_from_name("") == 0xa001875df8776b90ULL);
    CHECK(seed_from_name("resnet18") == 0x063c5528fd3ceaf5ULL);       // one whole block
    CHECK(seed_from_name("squeezenet1_1") == 0xd153aeb2bda91de1ULL);  // a block and a tail
}

TEST_CASE("seed_from_name depends on every byte of the name, and equal names give equal draws") {
    CHECK(seed_from_name("resnet18") != seed_from_name("resnet19"));
    CHECK(seed_from_name("resnet18") != seed_from_name("resnet18 "));
    CHECK(seed_from_name(std::string("a\0b", 3)) != seed_from_name(std::string("a\0c", 3)));
    Rng first(seed_from_name("bert")), second(seed_from_name(std::string("bert")));
    for (int i = 0; i < 4; ++i) CHECK(first.next() == second.next());
}
