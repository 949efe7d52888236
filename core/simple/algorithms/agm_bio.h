// AGM-BiO: the accelerated gradient method for simple bilevel optimization
// of Cao, Jiang, Hamedani & Mokhtari (Alg. 1), one outer iteration per step
// on a window of the last W rows of each kind.  The update and the choices
// made are written down in agm_bio.cc.
#ifndef F2OBO_CORE_SIMPLE_ALGORITHMS_AGM_BIO_H_
#define F2OBO_CORE_SIMPLE_ALGORITHMS_AGM_BIO_H_

#include "core/simple/simple_algorithm.h"

namespace f2obo {

const SimpleAlgorithmEntry& AgmBioAlgorithm();

}  // namespace f2obo

#endif  // F2OBO_CORE_SIMPLE_ALGORITHMS_AGM_BIO_H_
