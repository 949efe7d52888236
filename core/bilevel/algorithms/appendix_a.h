// The settings of the F2OBO paper's experiments (Appendix A) shared by
// several algorithms; each registry entry's `experiment` adds its own.
#ifndef F2OBO_CORE_BILEVEL_ALGORITHMS_APPENDIX_A_H_
#define F2OBO_CORE_BILEVEL_ALGORITHMS_APPENDIX_A_H_

#include "core/options.h"

namespace f2obo {

// "all algorithms use an inner learning rate alpha = 0.1 and an outer
// learning rate gamma = 0.001".
inline void AppendixACommon(AlgorithmOptions* o) {
  o->alpha = 0.1;
  o->gamma = 0.001;
}

// "For all our first-order algorithms, we use lambda_1 = 5 with tau = 1."
inline void AppendixAFirstOrder(AlgorithmOptions* o) {
  AppendixACommon(o);
  o->lambda1 = 5.0;
  o->tau = 1.0;
  // beta is not stated; 0.1, the generic fixed step of the paper's time (the
  // generic default is now automatic).
  o->beta = 0.1;
}

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_ALGORITHMS_APPENDIX_A_H_
