"""Branch-free vector math emitted as LLVM IR: exp, exp2, expm1, log, log2, log1p, tanh, erf,
erfc, sin, cos, tan, atan, atan2 and pow.

A libm call blocks loop vectorization and llvmlite's LLVM has no vector math library
(CODEGEN.md, "Transcendentals"), so float32 (and float16) kernels compute these functions as
plain IR that the loop vectorizer widens: range reduction, a polynomial and exponent bit
tricks (the approach of SLEEF and tinygrad), evaluated in double precision so that the float32
result is within 1 ulp of the correctly rounded value over the whole domain, with inf, -inf,
NaN, -0.0, underflow and overflow selected explicitly (never by branches). Every function
takes and returns a `double` value of an `ll.IRBuilder`; the caller converts. float64 kernels
use the `*_f64` methods (FUNCTIONS_F64: exp, exp2, expm1, log, log2, log1p, tanh, erf, erfc;
within 3 ulp of numpy/mpmath float64): Cody-Waite with LN2_HI/LN2_LO, Taylor polynomials of
degree 13-14, msun's log reduction and Lg1..Lg7 with double-double steps, msun-style expm1 and
tanh, erfc as exp(-hi)(1 - lo) erfcx(x) with x**2 = hi + lo and erfcx from a gathered table of
per-interval polynomials; the other float64 functions call libm. The erf/erfc polynomials
are Chebyshev fits (near-minimax) of erf(x)/x in x**2 on [0, 1] and of erfcx(x) = exp(x**2) *
erfc(x) on [1, 3] and [3, 10.5], made with numpy from scipy's double references; exp and log
use their Taylor and atanh series. sin, cos and tan reduce |x| modulo pi/2 exactly enough for
every float32: Cody-Waite with a three-part pi/2 below 2**25, and above it a Payne-Hanek step
that multiplies the 24-bit mantissa by four 24-bit chunks of 2/pi picked by the exponent from
a constant table (a gather: still branch-free), then Taylor polynomials on [-pi/4, pi/4].
atan reduces by 1/x and by pi/4 + atan((t - 1)/(t + 1)); atan2 and pow build on atan, exp
and log with C99's special cases selected explicitly. Imports llvmlite only.
"""

from __future__ import annotations

import math

from llvmlite import ir as ll

F64, I64, I1 = ll.DoubleType(), ll.IntType(64), ll.IntType(1)
LN2 = 0.6931471805599453
LN2_HI = 0.6931471803691238       # ln 2 with its low 32 bits cleared: n * LN2_HI is exact
LN2_LO = 1.9082149292705877e-10
LOG2E = 1.4426950408889634
INF, NAN = math.inf, math.nan

ERF_SMALL = (0.0, 1.0, (
    0.9654687386698674, -0.14053608902272113, 0.019852496688982067,
    -0.002285485561063272, 0.00021751715604677676, -1.7537169894307314e-05,
    1.2233827406869353e-06, -7.511465365890271e-08, 4.115773198572814e-09,
    -2.0456603949909014e-10, 9.20345997970395e-12,
))
ERFCX_MID = (1.0, 3.0, (
    0.25539567631050664, -0.10679646185337255, 0.04180275260339723,
    -0.015460637769879151, 0.0054407385409033955, -0.0018316641979159137,
    0.0005924699601182949, -0.00018477885300693592, 5.5728495974636035e-05,
    -1.6292114919273946e-05, 4.627656042456572e-06, -1.2825133644557164e-06,
    3.4572737901352106e-07, -8.759128921601035e-08, 2.2494113430821493e-08,
    -7.593453933167262e-09, 1.8801622867126775e-09,
))
ERFCX_TAIL = (3.0, 10.5, (
    0.08269505677453652, -0.044984627368512706, 0.02422585567006436,
    -0.012919569083560139, 0.006824749807836745, -0.0035719455678823392,
    0.0018527475594531466, -0.0009525895731092103, 0.00048529373440294105,
    -0.00024523940560521035, 0.00012402501634803858, -6.186730354371097e-05,
    2.809799140392628e-05, -1.3491861834058678e-05, 9.985530980775506e-06,
    -5.055645840860469e-06, -4.956936945393756e-07, 3.5082141761807705e-07,
    1.2090720655109915e-06, -5.907288030498573e-07,
))

TANH_SMALL = (0.0, 0.3025, (
    0.9524575912549617, -0.04483394002766922, 0.002552253850696132, -0.0001471935664857189,
    8.500155894765835e-06, -4.909463031410703e-07, 2.85470061507628e-08, -1.6502156547176151e-09,
))

# tanh(x)/x ~ P(x**2) on [0, 0.55**2], fitted in float64, evaluated in float32 (2e-9 relative)
TANH_SMALL_F32 = (0.9999999978772498, -0.3333330386232005, 0.13332352981795864,
                  -0.053836558664162946, 0.021026149481742744, -0.006227497710045167)
LN2_HI_F32 = 0.693145751953125          # 16 significant bits: n * LN2_HI_F32 is exact
LN2_LO_F32 = 1.428606765330187e-06
F32, I32 = ll.FloatType(), ll.IntType(32)

# pi/2 in three parts for Cody-Waite: 28 + 28 significant bits, then the rest (n < 2**25)
PIO2 = math.pi / 2
PIO2_1 = 1.5707963258028030396
PIO2_2 = 9.920935808982456e-10
PIO2_3 = -1.2177051777973966e-18
TAN_PI_8 = 0.41421356237309503


# float64 tables
EXP_TAYLOR_F64 = [1 / math.factorial(k) for k in range(14)]
EXP2_TAYLOR_F64 = [LN2 ** k / math.factorial(k) for k in range(14)]
EXPM1_TAYLOR_F64 = [1 / math.factorial(k + 2) for k in range(13)]
LOG2E_LO = 2.0355273740931033e-17        # log2(e) - LOG2E
# FreeBSD msun e_log.c, Lg1..Lg7: R(z) = z (Lg1 + z Lg2 + ...) ~ 2 atanh(s)/s - 2, z = s**2
MSUN_LG = (6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01,
           2.222219843214978396e-01, 1.818357216161805012e-01, 1.531383769920937332e-01,
           1.479819860511658591e-01)

# erfcx(x) = exp(x**2) erfc(x) on [0.5 + i, 1.5 + i], i = 0..27: 19 power coefficients each in
# t = 2 (x - 1 - i) in [-1, 1], converted from Chebyshev interpolants of degree 18 computed with
# mpmath at 40 digits (relative error < 1e-16 after rounding the coefficients to double)
ERFCX_F64_N = 19
ERFCX_F64 = (
    0.427583576155807, -0.13660600739194928, 0.03859289034297711, -0.00990337111766582,
    0.0023482685134556683, -0.0005206834090758823, 0.00010890847460885351, -2.163331855782251e-05,
    4.102614842094541e-06, -7.460049524970425e-07, 1.3053025133622078e-07, -2.20428911448681e-08,
    3.6018429179225167e-09, -5.70797764719546e-10, 8.78797088728598e-11, -1.3113884796166697e-11,
    1.9151601750676396e-12, -3.0008786280696753e-13, 4.183458346599813e-14,
    0.25539567631050575, -0.0533982309267448, 0.010450688150881637, -0.0019325797205363752,
    0.00034004615859201684, -5.723950861683378e-05, 9.257343677058544e-06,
    -1.4435809934473376e-06, 2.1768873144354927e-07, -3.1823670530638356e-08,
    4.519702504675011e-09, -6.247661211072368e-10, 8.419316621599212e-11, -1.1077080547312284e-11,
    1.4245738663259733e-12, -1.789185676331384e-13, 2.2058148093960164e-14,
    -2.854450568458043e-15, 3.3903524213536473e-16,
    0.17900115118138996, -0.027186130003586436, 0.003971092789967834, -0.0005599288772965719,
    7.643994077355035e-05, -1.012892326552702e-05, 1.3055334316990487e-06,
    -1.6398019109486107e-07, 2.0103267820434985e-08, -2.408921344350093e-09,
    2.8248698836516986e-10, -3.245451513908921e-11, 3.656660989299546e-12,
    -4.0441141307131917e-13, 4.393734588117063e-14, -4.68772058725216e-15, 4.925411081943961e-16,
    -5.3551587230063964e-17, 5.461957135264257e-18,
    0.13699945762506138, -0.016191753047510728, 0.0018663583112438927, -0.0002101477595932643,
    2.3147029312222277e-05, -2.49715250954861e-06, 2.6415076965278376e-07,
    -2.7424739451873266e-08, 2.79705337735703e-09, -2.804618018696907e-10, 2.7667948138751985e-11,
    -2.6871915806972546e-12, 2.5710060503002283e-13, -2.424578270718888e-14,
    2.2548523181760324e-15, -2.067717998001574e-16, 1.8726985259302313e-17,
    -1.7387046432526587e-18, 1.537827801503599e-19,
    0.11070463773306863, -0.010666394882413156, 0.0010101722272342689, -9.41121016784111e-05,
    8.631401306269732e-06, -7.798088615713781e-07, 6.944272421299594e-08, -6.098687102958161e-09,
    5.284908239631546e-10, -4.520993685285428e-11, 3.819572772577915e-12, -3.188276840902373e-13,
    2.6303995332223815e-14, -2.1456873465793355e-15, 1.731139275315579e-16,
    -1.3813334969095305e-17, 1.0911723489778611e-18, -8.780963097302726e-20,
    6.805701340547561e-21,
    0.09277656780053835, -0.007530176744526161, 0.0006036117165561068, -4.780602430881324e-05,
    3.7424281062934843e-06, -2.896887033291428e-07, 2.2180305528647545e-08,
    -1.6803597846694296e-09, 1.259992570383837e-10, -9.353816678346011e-12, 6.8767284496648e-13,
    -5.0079206108204817e-14, 3.613432035190162e-15, -2.5838575506872893e-16,
    1.8314548641306994e-17, -1.286759491976547e-18, 8.966822411382178e-20, -6.33809702747021e-21,
    4.349130489431087e-22,
    0.07980005432915294, -0.005589203243685752, 0.0003878022293880996, -2.6662005375393124e-05,
    1.8167692665744796e-06, -1.227235643350409e-07, 8.219947156992254e-09, -5.460217240820942e-10,
    3.597768874018206e-11, -2.3518934288696563e-12, 1.5255903680512972e-13,
    -9.821223330021886e-15, 6.275795807996329e-16, -3.981191586749772e-17, 2.5076121279718175e-18,
    -1.568232768327604e-19, 9.741725055316966e-21, -6.119516788409865e-22, 3.7536481406702604e-23,
    0.06998516620088092, -0.004308253940708866, 0.00026327578738477125, -1.5973557092087485e-05,
    9.623592389214406e-07, -5.7580926934443353e-08, 3.4220339975289154e-09,
    -2.0202735528433608e-10, 1.1849769561220976e-11, -6.906134613784045e-13,
    3.999770895885861e-14, -2.302278091044873e-15, 1.3171914478379712e-16, -7.491224452862788e-18,
    4.2355699489355796e-19, -2.380826218771525e-20, 1.3308080633340559e-21,
    -7.505867541203047e-23, 4.151813311453033e-24,
    0.06230772403777468, -0.0034200672077841295, 0.0001866285744150877, -1.0125478052091823e-05,
    5.462461846793612e-07, -2.930467278633211e-08, 1.563506210448603e-09, -8.296864273266123e-11,
    4.379415078793774e-12, -2.2995396190970274e-13, 1.2012188221029165e-14,
    -6.242988148641395e-16, 3.2283731239194785e-17, -1.6612176976455316e-18, 8.50649448920298e-20,
    -4.3346896324167746e-21, 2.1985071755334597e-22, -1.1232717244757197e-23,
    5.647269547334857e-25,
    0.05614099274382259, -0.0027796561095304283, 0.0001369676383035046, -6.717223910056063e-06,
    3.2789501279791835e-07, -1.5932365409769533e-08, 7.706420502106435e-10,
    -3.7108886111190204e-11, 1.7790204991774579e-12, -8.491534042451371e-14,
    4.0356845343710445e-15, -1.9098407893068285e-16, 9.000123131282276e-18,
    -4.2236990111328953e-19, 1.9740215944816825e-20, -9.188131988733537e-22,
    4.2596595355929584e-23, -1.9868763290230526e-24, 9.142892982813333e-26,
    0.051080594758088446, -0.002303041208783406, 0.00010342204121337717, -4.626050348184743e-06,
    2.0611669416410167e-07, -9.148307657450647e-09, 4.0449380834895446e-10,
    -1.7817419555260576e-11, 7.819111333263602e-13, -3.418747900448264e-14,
    1.4893297613893388e-15, -6.464655699137773e-17, 2.796062811034502e-18,
    -1.2050674396367989e-19, 5.175522149818897e-21, -2.215017148450459e-22, 9.447580240855744e-24,
    -4.0503803450180503e-25, 1.716601819907692e-26,
    0.04685422101489376, -0.0019389313690311356, 7.996703953662758e-05, -3.2870700253456117e-06,
    1.3466986604161202e-07, -5.499324034692314e-09, 2.2384076741637362e-10,
    -9.081829764239097e-12, 3.67303317164704e-13, -1.48083417936782e-14, 5.951557058218428e-16,
    -2.3845675178766304e-17, 9.524792294603927e-19, -3.792975808175305e-20, 1.505895470081246e-21,
    -5.960754201981483e-23, 2.3524973170246214e-24, -9.325260886102091e-26, 3.660121028536206e-27,
    0.043271921864609694, -0.0016545993078302824, 6.308496525558805e-05, -2.398368530832203e-06,
    9.092293174384548e-08, -3.4372305492220704e-09, 1.2957812200597048e-10,
    -4.8713840762026836e-12, 1.826335015437949e-13, -6.828502003556507e-15,
    2.5462247256640053e-16, -9.468987128427956e-18, 3.5120030089394648e-19,
    -1.2991512065279415e-20, 4.793212919346229e-22, -1.7638316363667652e-23,
    6.474011064230117e-25, -2.3852376510673796e-26, 8.712887904476268e-28,
    0.04019722865021846, -0.0014283824446978566, 5.0630049669618185e-05, -1.7901756580912517e-06,
    6.314140538289205e-08, -2.2216307370274345e-09, 7.797872884365706e-11,
    -2.7304521003597714e-12, 9.537937709896602e-14, -3.3238634215957383e-15,
    1.1556006471429735e-16, -4.008254981557564e-18, 1.387052178815979e-19, -4.788803190716577e-21,
    1.6495467488724072e-22, -5.669003078879617e-24, 1.943884363239631e-25, -6.687497933005441e-27,
    2.2834716013320044e-28,
    0.03752960638850576, -0.0012454877201698007, 4.1243695852935756e-05, -1.3628074302880039e-06,
    4.493411803695529e-08, -1.4783889179345278e-09, 4.8537541576621036e-11,
    -1.5901907597069111e-12, 5.198867408835628e-14, -1.6961409475679373e-15,
    5.5222283065916496e-17, -1.7942025268243384e-18, 5.817530253126085e-20,
    -1.8824404401888542e-21, 6.078892849801604e-23, -1.9590665292276728e-24,
    6.300989287201387e-26, -2.0324666689309085e-27, 6.512728996930089e-29,
    0.03519337782493084, -0.001095538348862886, 3.40376653296223e-05, -1.0555097191620333e-06,
    3.266928955465466e-08, -1.00924534130841e-09, 3.1119886065462043e-11, -9.577848009731882e-13,
    2.942327714500092e-14, -9.022184629532753e-16, 2.7614316524808127e-17, -8.436515526966503e-19,
    2.572778493254749e-20, -7.831705775696899e-22, 2.3797380612267363e-23, -7.218075775842684e-25,
    2.185464589180656e-26, -6.634015542099029e-28, 2.0019670313339468e-29,
    0.03313049999972554, -0.000971083552422163, 2.8414804342998232e-05, -8.300341267038525e-07,
    2.4205504383405913e-08, -7.046977668051549e-10, 2.0481692669220152e-11,
    -5.943011465478416e-13, 1.7215855412096065e-14, -4.97892363143078e-16, 1.437575326157161e-17,
    -4.143978295279805e-19, 1.1926127399006129e-20, -3.4267300046054e-22, 9.830194691205139e-24,
    -2.81544265762599e-25, 8.050855371965432e-27, -2.307418267474988e-28, 6.578560809235558e-30,
    0.03129571781590521, -0.000866662861462509, 2.3963700813721417e-05, -6.616053614230027e-07,
    1.8238475311665138e-08, -5.020250203057657e-10, 1.3797881721464631e-11, -3.78662738074209e-13,
    1.0376446924569177e-14, -2.8392493276214596e-16, 7.757467256596447e-18,
    -2.1164143293930678e-19, 5.765652948583176e-21, -1.568433387272102e-22, 4.260456362181539e-24,
    -1.1556307243745016e-25, 3.1301255808625914e-27, -8.495533443315827e-29,
    2.2949441044103286e-30,
    0.029653230641262164, -0.00077820136377518, 2.0394704451331173e-05, -5.337657707659027e-07,
    1.3950645278359137e-08, -3.6412501882554375e-10, 9.491213582372885e-12,
    -2.4706447824100867e-13, 6.42271307590974e-15, -1.6674340869103026e-16,
    4.3231772825295856e-18, -1.1193963431376516e-19, 2.8946324417014254e-21,
    -7.475390518908078e-23, 1.9280019021099874e-24, -4.966089272988392e-26,
    1.2774991874737696e-27, -3.2923442810079484e-29, 8.448907785068932e-31,
    0.02817434874105132, -0.0007026087267299006, 1.7499917963824077e-05, -4.353346961562379e-07,
    1.0816264696820547e-08, -2.6841082834160036e-10, 6.652630263044331e-12,
    -1.6468698713050713e-13, 4.071923614002923e-15, -1.005579205772345e-16,
    2.4803395456771674e-18, -6.110630682484643e-20, 1.5036363617131209e-21,
    -3.695585994068391e-23, 9.072131238178425e-25, -2.224442444151111e-26, 5.447828464507871e-28,
    -1.3364378033895034e-29, 3.265870988425929e-31,
    0.026835813158647956, -0.0006375072161491974, 1.512752009541581e-05, -3.5856202362223944e-07,
    8.489387910219216e-09, -2.007731393032376e-10, 4.743004956936438e-12, -1.1192365085051443e-13,
    2.6382263259269693e-15, -6.211917564342901e-17, 1.4610474451475495e-18,
    -3.4326497601430974e-20, 8.056060786067456e-22, -1.8886242337370574e-23, 4.42282207260131e-25,
    -1.034629209053815e-26, 2.417715278797118e-28, -5.658264741417974e-30, 1.3195706790893672e-31,
    0.025618570005879453, -0.0005810434184083282, 1.3164898978252301e-05, -2.9797722753783254e-07,
    6.737620823458782e-09, -1.5219113056461238e-10, 3.4342565513197824e-12,
    -7.741730761013891e-14, 1.7434385296043877e-15, -3.92229059747699e-17, 8.815333357256084e-19,
    -1.9792691038315788e-20, 4.439554183058407e-22, -9.948178199582346e-24,
    2.2269921784081997e-25, -4.980408857424932e-27, 1.112719259364307e-28,
    -2.4894702320758848e-30, 5.551987271908652e-32,
    0.024506862089282606, -0.0005317554942563511, 1.1527338372613842e-05, -2.496548526857351e-07,
    5.40189363375337e-09, -1.1677455330800702e-10, 2.5220151320872486e-12,
    -5.4418373713827794e-14, 1.1731213281981192e-15, -2.5266256484128528e-17,
    5.436764964103463e-19, -1.1688074966023875e-20, 2.5104366554519727e-22,
    -5.3871673493664784e-24, 1.1549884734795008e-25, -2.4740075022647904e-27,
    5.294600662693461e-29, -1.1345316535375982e-30, 2.4239866216507307e-32,
    0.02348754606368264, -0.0004884780193729145, 1.0150283445686111e-05, -2.1073566333020064e-07,
    4.371450729559892e-09, -9.060283113258465e-11, 1.8762362663190464e-12,
    -3.8820739233601895e-14, 8.025489441347118e-16, -1.6577217507540563e-17,
    3.421251886382392e-19, -7.054929677502212e-21, 1.4535683825244156e-22, -2.992363132447908e-24,
    6.155028604294218e-26, -1.2649780097363647e-27, 2.5976165180133225e-29,
    -5.3404080978936555e-31, 1.0952269974264942e-32,
    0.02254957243264136, -0.00045027273172231337, 8.983961631422761e-06, -1.7910835852921517e-07,
    3.567963120250438e-09, -7.102025166932586e-11, 1.4125447320121105e-12,
    -2.8072504908595218e-14, 5.574679113968423e-16, -1.1061629930728112e-17,
    2.1932074302183176e-19, -4.345126347114088e-21, 8.601773608720954e-23,
    -1.7015208761466822e-24, 3.3631869029598597e-26, -6.642465673380587e-28,
    1.3109130894332906e-29, -2.5899140318362796e-31, 5.1058790254732145e-33,
    0.021683584850562907, -0.0004163774331207149, 7.989582071432595e-06, -1.5319423436999375e-07,
    2.9352355241150165e-09, -5.6198711601288744e-11, 1.075210070666838e-12,
    -2.055628047236862e-14, 3.927178814793642e-16, -7.497257524537968e-18, 1.430245101694944e-19,
    -2.7264998056478332e-21, 5.1938344824616215e-23, -9.886874915630839e-25,
    1.880697458720004e-26, -3.574933161481545e-28, 6.790596977470993e-30, -1.2911600022080518e-31,
    2.448304058592512e-33,
    0.02088160799042094, -0.0003861678063908888, 7.136611328237077e-06, -1.3179911101443255e-07,
    2.432416682214874e-09, -4.486101748293589e-11, 8.268115113613434e-13, -1.5228276387381523e-14,
    2.8028665267132055e-16, -5.155396840567443e-18, 9.476116403393322e-20, -1.740635578865698e-21,
    3.195178229902403e-23, -5.861282586349101e-25, 1.0744869504970108e-26,
    -1.9684329813077042e-28, 3.603733029046188e-30, -6.603916022254881e-32,
    1.2073218889283578e-33,
    0.020136801964214277, -0.00035912854975653723, 6.400794462048313e-06, -1.1400998030527987e-07,
    2.0294456190801067e-09, -3.610256367938955e-11, 6.418377528576388e-13,
    -1.1403537097269812e-14, 2.0247971315808425e-16, -3.592953356505194e-18,
    6.371625968966875e-20, -1.1292188128974266e-21, 2.00002569753537e-23, -3.5401624153765737e-25,
    6.262409137791678e-27, -1.1071091025552568e-28, 1.956006406966262e-30,
    -3.4588085239322984e-32, 6.11491132740197e-34,
)
# erf(x)/x = 2/sqrt(pi) sum (-z)**n / (n! (2n + 1)), z = x**2 <= 1/4: Taylor to degree 13
ERF_TAYLOR_F64 = [2 / math.sqrt(math.pi) * (-1) ** n / (math.factorial(n) * (2 * n + 1))
                  for n in range(14)]


def _two_over_pi_table() -> list:
    """For exponents E = 2..105 of x = M * 2**E (M a 24-bit integer): four doubles T_j, the
    24-bit chunks of 2/pi starting at its bit E - 1, scaled so that M * (T_0 + ... + T_3) is
    x * 2/pi modulo 4 (the bits above contribute multiples of 4); each M * T_j is exact."""
    prec = 420

    def atan_inv(n):   # arctan(1/n) * 2**prec
        s, t, k, sign = 0, (1 << prec) // n, 1, 1
        while t:
            s, t, k, sign = s + sign * (t // k), t // (n * n), k + 2, -sign
        return s

    pi = 4 * (4 * atan_inv(5) - atan_inv(239))   # pi * 2**prec
    bits = (2 << (2 * prec)) // pi                # 2/pi * 2**prec
    out = []
    for e in range(2, 106):
        for j in range(4):
            last = e - 1 + 24 * j + 23
            chunk = (bits >> (prec - last)) & 0xFFFFFF
            out.append(math.ldexp(chunk, -22 - 24 * j))
    return out


TWO_OVER_PI = _two_over_pi_table()


def _c(v: float) -> ll.Constant:
    return ll.Constant(F64, v)


# exponent-field layout per float type: (integer type, bias, mantissa bits)
_EXP_FIELD = {"double": (I64, 1023, 52), "float": (I32, 127, 23)}


class VecMath:
    """The functions above on `double` values at the position of builder `b`."""

    def __init__(self, b: ll.IRBuilder):
        self.b = b
        self.module = b.module

    # ---- type-generic building blocks (the float type is that of the operands)

    @staticmethod
    def _k(like, v):
        """The constant v in the float type of value `like`."""
        return ll.Constant(like.type, v)

    def _intr(self, name, *args):
        ty = args[0].type
        full = f"llvm.{name}.{'f64' if ty == F64 else 'f32'}"
        fn = self.module.globals.get(full)
        if fn is None:
            fn = ll.Function(self.module, ll.FunctionType(ty, [ty] * len(args)), full)
        return self.b.call(fn, list(args))

    def horner(self, x, coeffs):
        """coeffs[0] + coeffs[1] x + ... in fma steps, in the type of x."""
        acc = self._k(x, coeffs[-1])
        for c in reversed(coeffs[:-1]):
            acc = self._intr("fma", acc, x, self._k(x, c))
        return acc

    def cheb_poly(self, x, table):
        """A fitted polynomial (lo, hi, power coefficients in t = (x - mid) / half)."""
        lo, hi, coeffs = table
        t = self.b.fmul(self.b.fsub(x, _c((lo + hi) / 2)), _c(2 / (hi - lo)))
        return self.horner(t, coeffs)

    def select(self, c, x, y):
        return self.b.select(c, x, y)

    def cmp(self, op, x, y):
        return self.b.fcmp_ordered(op, x, self._k(x, y) if isinstance(y, float) else y)

    def isnan(self, x):
        return self.b.fcmp_unordered("uno", x, x)

    def _nan_through(self, x, y):
        """y, or x itself where x is NaN."""
        return self.select(self.isnan(x), x, y)

    def _lower(self, x, lo):
        """max(x, lo); NaN stays NaN."""
        return self.select(self.cmp("<", x, lo), self._k(x, lo), x)

    def _upper(self, x, hi):
        """min(x, hi); NaN stays NaN."""
        return self.select(self.cmp(">", x, hi), self._k(x, hi), x)

    def clamp(self, x, lo, hi):
        """min(max(x, lo), hi); NaN stays NaN."""
        return self._upper(self._lower(x, lo), hi)

    def _exp_bits(self, k, fty):
        """2**k for an integer k (of the integer type matching fty) in fty's normal exponent
        range, from the exponent bits."""
        b = self.b
        ity, bias, mant = _EXP_FIELD[str(fty)]
        return b.bitcast(b.shl(b.add(k, ll.Constant(ity, bias)), ll.Constant(ity, mant)), fty)

    def pow2i(self, n):
        """2**n for an integral double n in [-1022, 1023] (exponent bits)."""
        return self._exp_bits(self.b.fptosi(n, I64), F64)

    def _cody_waite(self, xc, ln2_hi, ln2_lo):
        """(n, r) with n = round(xc / ln2), r = xc - n ln2 by the two-part ln2 (hi, lo)."""
        n = self._intr("roundeven", self.b.fmul(xc, self._k(xc, LOG2E)))
        r = self._intr("fma", n, self._k(xc, -ln2_hi), xc)
        return n, self._intr("fma", n, self._k(xc, -ln2_lo), r)

    def _exp2_parts(self, x, lo, hi):
        """(n, r) with x = n + r exactly, n = round(x), x clamped to [lo, hi]."""
        xc = self.clamp(x, lo, hi)
        n = self._intr("roundeven", xc)
        return n, self.b.fsub(xc, n)

    def _const_table(self, name, values):
        """An internal constant global array of doubles (created once per module)."""
        g = self.module.globals.get(name)
        if g is None:
            ty = ll.ArrayType(F64, len(values))
            g = ll.GlobalVariable(self.module, ty, name)
            g.global_constant = True
            g.linkage = "internal"
            g.initializer = ll.Constant(ty, list(values))
        return g

    def _gather(self, tab, base, j):
        """tab[base + j] (base an i64 value): a per-lane load."""
        b = self.b
        ptr = b.gep(tab, [b.add(base, ll.Constant(I64, j))], inbounds=True, source_etype=F64)
        return b.load(ptr, typ=F64)

    # ---- exp family

    def _exp_reduced(self, r):
        """exp(r) for |r| <= ln2/2: Taylor series to degree 10 (relative error < 2e-13)."""
        return self.horner(r, [1 / math.factorial(k) for k in range(11)])

    def exp(self, x):
        """exp(x) to double accuracy for the float32 range; clamped so that 2**n is normal."""
        n, r = self._exp_parts_f64(x, -745.0, 709.0)
        # split 2**n in two factors so that n down to -1074 stays representable
        y = self._scale_f64(self._exp_reduced(r), n)
        y = self.select(self.cmp(">", x, 709.0), _c(INF), y)
        return self._nan_through(x, y)

    def exp2(self, x):
        n, r = self._exp2_parts(x, -1075.0, 1024.0)
        y = self._scale_f64(self._exp_reduced(self.b.fmul(r, _c(LN2))), n)
        y = self.select(self.cmp(">", x, 1023.0), _c(INF), y)
        return self._nan_through(x, y)

    def expm1(self, x):
        """x + x**2/2 + ... near 0 (relative accuracy), exp(x) - 1 elsewhere."""
        small = self.b.fmul(x, self.horner(x, [1 / math.factorial(k + 1) for k in range(16)]))
        big = self.b.fsub(self.exp(x), _c(1.0))
        return self.select(self.cmp("<", self._intr("fabs", x), 0.5), small, big)

    # ---- log family

    def _log_reduce(self, x):
        """(k, m) with x = 2**k m, m in [sqrt(1/2), sqrt(2)), k a double, for finite x > 0
        (subnormal doubles scaled up by 2**54 first so that the exponent field is meaningful)."""
        b = self.b
        sub = self.cmp("<", x, 2.2250738585072014e-308)
        xs = self.select(sub, b.fmul(x, _c(2.0 ** 54)), x)
        bits = b.bitcast(xs, I64)
        e = b.sub(b.lshr(bits, ll.Constant(I64, 52)), ll.Constant(I64, 1023))
        mbits = b.or_(b.and_(bits, ll.Constant(I64, (1 << 52) - 1)),
                      ll.Constant(I64, 1023 << 52))
        m = b.bitcast(mbits, F64)
        big = self.cmp(">", m, 1.4142135623730951)
        m = self.select(big, b.fmul(m, _c(0.5)), m)
        k = b.sitofp(e, F64)
        k = b.fadd(k, self.select(big, _c(1.0), _c(0.0)))
        k = b.fsub(k, self.select(sub, _c(54.0), _c(0.0)))
        return k, m

    def _log_special(self, x, y, at_zero=0.0):
        """inf at inf, -inf at `at_zero`, NaN below it and at NaN."""
        y = self.select(self.cmp("==", x, INF), _c(INF), y)
        y = self.select(self.cmp("==", x, at_zero), _c(-INF), y)
        y = self.select(self.cmp("<", x, at_zero), _c(NAN), y)
        return self._nan_through(x, y)

    def log(self, x):
        """log(x) = e*ln2 + 2*atanh(s), s = (m - 1)/(m + 1), m in [sqrt(1/2), sqrt(2))."""
        b = self.b
        ef, m = self._log_reduce(x)
        s = b.fdiv(b.fsub(m, _c(1.0)), b.fadd(m, _c(1.0)))
        s2 = b.fmul(s, s)
        series = self.horner(s2, [2 / (2 * k + 1) for k in range(11)])
        y = self._intr("fma", ef, _c(LN2), b.fmul(s, series))
        return self._log_special(x, y)

    def log2(self, x):
        return self.b.fmul(self.log(x), _c(LOG2E))

    def log1p(self, x):
        """log(u) * x / (u - 1) with u = 1 + x (exact where u == 1: then x)."""
        b = self.b
        u = b.fadd(x, _c(1.0))
        um1 = b.fsub(u, _c(1.0))
        corr = b.fmul(self.log(u), b.fdiv(x, um1))
        y = self.select(self.cmp("==", um1, 0.0), x, corr)
        return self._log_special(x, y, at_zero=-1.0)

    # ---- tanh, erf, erfc

    def _tanh_from(self, x, a, small, e, cut):
        """tanh(x) from a = |x|, small = tanh(a) for a < cut and e = exp(2a):
        1 - 2/(e + 1) beyond cut; the sign copied from x (NaN in, NaN out; -0.0 kept)."""
        b = self.b
        big = b.fsub(self._k(x, 1.0), b.fdiv(self._k(x, 2.0), b.fadd(e, self._k(x, 1.0))))
        t = self.select(self.cmp("<", a, cut), small, big)
        return self._intr("copysign", t, x)

    def tanh(self, x):
        """|x| < 0.55: x * P(x**2) (a Chebyshev fit of tanh(x)/x); else 1 - 2/(exp(2|x|) + 1),
        |x| clamped to 20 (tanh = 1 beyond); the sign copied from x."""
        b = self.b
        a = self.clamp(self._intr("fabs", x), 0.0, 20.0)
        small = b.fmul(a, self.cheb_poly(b.fmul(a, a), TANH_SMALL))
        return self._tanh_from(x, a, small, self.exp(b.fmul(a, _c(2.0))), 0.55)

    def _erfc_pos(self, a):
        """erfc(a) for a >= 0 (a clamped to 10.5, where erfc is below every float32)."""
        b = self.b
        ac = self.clamp(a, 0.0, 10.5)
        tail = b.fmul(self.exp(b.fneg(b.fmul(ac, ac))),
                      self.select(self.cmp("<", ac, 3.0), self.cheb_poly(ac, ERFCX_MID),
                                  self.cheb_poly(ac, ERFCX_TAIL)))
        head = b.fsub(_c(1.0), self._erf_small(ac))
        return self.select(self.cmp("<", ac, 1.0), head, tail)

    def _erf_small(self, a):
        return self.b.fmul(a, self.cheb_poly(self.b.fmul(a, a), ERF_SMALL))

    def _erf_from(self, x, cut, small, erfc_pos):
        """small(|x|) below cut, 1 - erfc_pos(|x|) from it on, the sign copied from x."""
        a = self._intr("fabs", x)
        y = self.select(self.cmp("<", a, cut), small(a), self.b.fsub(_c(1.0), erfc_pos(a)))
        return self._intr("copysign", y, x)

    def _erfc_reflect(self, x, pos):
        """erfc(x) from pos = erfc(|x|): 2 - pos for x < 0."""
        return self.select(self.cmp("<", x, 0.0), self.b.fsub(_c(2.0), pos), pos)

    def erf(self, x):
        return self._erf_from(x, 1.0, self._erf_small, self._erfc_pos)

    def erfc(self, x):
        pos = self._erfc_pos(self._intr("fabs", x))
        return self._nan_through(x, self._erfc_reflect(x, pos))

    # ---- sin, cos, tan (float32 arguments, computed in double)

    def signbit(self, x):
        return self.b.icmp_signed("<", self.b.bitcast(x, I64), ll.Constant(I64, 0))

    def _reduce_pio2(self, x):
        """(r, q) with |x| = (4k + q) * pi/2 + r, |r| <= pi/4 (a hair more at ties), q an i64
        in 0..3, for x a float32 value held in a double; r relative error ~1e-16."""
        b = self.b
        a = self._intr("fabs", x)
        n = self._intr("roundeven", b.fmul(a, _c(2 / math.pi)))
        r = self._intr("fma", b.fneg(n), _c(PIO2_1), a)
        r = self._intr("fma", b.fneg(n), _c(PIO2_2), r)
        r = self._intr("fma", b.fneg(n), _c(PIO2_3), r)
        # Payne-Hanek for |x| >= 2**25 (exponent field >= 152)
        bits = b.bitcast(b.fptrunc(a, F32), I32)
        ex = b.lshr(bits, ll.Constant(I32, 23))
        m = b.uitofp(b.or_(b.and_(bits, ll.Constant(I32, 0x7FFFFF)), ll.Constant(I32, 0x800000)),
                     F64)
        idx = b.sub(ex, ll.Constant(I32, 152))
        idx = b.select(b.icmp_signed("<", idx, ll.Constant(I32, 0)), ll.Constant(I32, 0), idx)
        idx = b.select(b.icmp_signed(">", idx, ll.Constant(I32, 103)), ll.Constant(I32, 103), idx)
        idx = b.zext(b.shl(idx, ll.Constant(I32, 2)), I64)
        tab = self._table()
        ts = [self._gather(tab, idx, j) for j in range(4)]

        def mod4(v):
            return b.fsub(v, b.fmul(self._intr("floor", b.fmul(v, _c(0.25))), _c(4.0)))

        r01 = mod4(b.fadd(mod4(b.fmul(m, ts[0])), b.fmul(m, ts[1])))   # exact
        p2, p3 = b.fmul(m, ts[2]), b.fmul(m, ts[3])
        nb = self._intr("roundeven", b.fadd(r01, p2))
        f = b.fadd(b.fadd(b.fsub(r01, nb), p2), p3)
        big = b.icmp_unsigned(">=", ex, ll.Constant(I32, 152))
        r = self.select(big, b.fmul(f, _c(PIO2)), r)
        n = self.select(big, nb, n)
        q = b.and_(b.fptosi(n, I64), ll.Constant(I64, 3))
        return r, q

    def _table(self):
        return self._const_table("wick_two_over_pi", TWO_OVER_PI)

    def _sincos_poly(self, r):
        b = self.b
        z = b.fmul(r, r)
        s = self._intr("fma", b.fmul(r, z), self.horner(
            z, [(-1) ** (k + 1) / math.factorial(2 * k + 3) for k in range(7)]), r)
        c = self.horner(z, [(-1) ** k / math.factorial(2 * k) for k in range(9)])
        return s, c

    def _bit(self, q, k):
        return self.b.icmp_unsigned("!=", self.b.and_(q, ll.Constant(I64, k)),
                                    ll.Constant(I64, 0))

    def _trig_special(self, x, y):
        """NaN for inf and NaN arguments."""
        bad = self.b.fcmp_unordered("ueq", self._intr("fabs", x), _c(INF))
        return self.select(bad, _c(NAN), y)

    def sin(self, x):
        b = self.b
        r, q = self._reduce_pio2(x)
        s, c = self._sincos_poly(r)
        v = self.select(self._bit(q, 1), c, s)
        v = self.select(self._bit(q, 2), b.fneg(v), v)
        v = self.select(self.signbit(x), b.fneg(v), v)
        return self._trig_special(x, v)

    def cos(self, x):
        b = self.b
        r, q = self._reduce_pio2(x)
        s, c = self._sincos_poly(r)
        v = self.select(self._bit(q, 1), s, c)
        v = self.select(self._bit(b.add(q, ll.Constant(I64, 1)), 2), b.fneg(v), v)
        return self._trig_special(x, v)

    def tan(self, x):
        b = self.b
        r, q = self._reduce_pio2(x)
        s, c = self._sincos_poly(r)
        v = self.select(self._bit(q, 1), b.fneg(b.fdiv(c, s)), b.fdiv(s, c))
        v = self.select(self.signbit(x), b.fneg(v), v)
        return self._trig_special(x, v)

    # ---- atan, atan2, pow

    def _atan01(self, t):
        """atan(t) for t in [0, 1] (t > tan(pi/8) goes through pi/4 + atan((t-1)/(t+1)))."""
        b = self.b
        mid = self.cmp(">", t, TAN_PI_8)
        u = self.select(mid, b.fdiv(b.fsub(t, _c(1.0)), b.fadd(t, _c(1.0))), t)
        z = b.fmul(u, u)
        p = self._intr("fma", b.fmul(u, z), self.horner(
            z, [(-1) ** (k + 1) / (2 * k + 3) for k in range(13)]), u)
        return self.select(mid, b.fadd(p, _c(math.pi / 4)), p)

    def atan(self, x):
        b = self.b
        a = self._intr("fabs", x)
        inv = self.cmp(">", a, 1.0)
        v = self._atan01(self.select(inv, b.fdiv(_c(1.0), a), a))
        v = self.select(inv, b.fsub(_c(PIO2), v), v)
        v = self._intr("copysign", v, x)
        return self.select(self.isnan(x), x, v)

    def atan2(self, y, x):
        b = self.b
        ax, ay = self._intr("fabs", x), self._intr("fabs", y)
        swap = self.cmp(">", ay, ax)
        t = b.fdiv(self.select(swap, ax, ay), self.select(swap, ay, ax))
        t = self.select(self.cmp("==", ax, ay), _c(1.0), t)                # both inf
        t = self.select(self.cmp("==", self.select(swap, ay, ax), 0.0), _c(0.0), t)  # both 0
        v = self._atan01(t)
        v = self.select(swap, b.fsub(_c(PIO2), v), v)
        v = self.select(self.signbit(x), b.fsub(_c(math.pi), v), v)
        v = self._intr("copysign", v, y)
        return self.select(b.or_(self.isnan(x), self.isnan(y)), _c(NAN), v)

    def pow(self, x, y):
        """exp(y * log|x|) (in double: exact enough for float32), the sign from odd integer y,
        NaN for negative x and non-integral y, and C99's special cases (pow(x, 0) = 1,
        pow(1, y) = 1, pow(-1, +-inf) = 1)."""
        b = self.b
        a = self._intr("fabs", x)
        v = self.exp(b.fmul(y, self.log(a)))
        fl = self._intr("floor", y)
        integral = self.cmp("==", fl, y)
        odd = b.and_(integral, self.cmp("!=", b.fmul(self._intr("floor", b.fmul(y, _c(0.5))),
                                                      _c(2.0)), y))
        neg = self.signbit(x)
        v = self.select(b.and_(neg, odd), b.fneg(v), v)
        nonint = b.xor(integral, ll.Constant(I1, 1))
        finite = b.and_(self.cmp(">", a, 0.0), self.cmp("<", a, INF))   # 0 and inf: exp does it
        v = self.select(b.and_(b.and_(neg, nonint), finite), _c(NAN), v)
        v = self.select(b.and_(self.cmp("==", a, 1.0), self.cmp("==", self._intr("fabs", y),
                                                               INF)), _c(1.0), v)
        v = self.select(self.cmp("==", x, 1.0), _c(1.0), v)
        return self.select(self.cmp("==", y, 0.0), _c(1.0), v)

    # ---- float32-native exp and tanh (the GELU-tanh path: twice the lanes of double)

    def _exp_poly_f32(self, r):
        """e**r by its Taylor polynomial to degree 7, in float32."""
        return self.horner(r, [1 / math.factorial(k) for k in range(8)])

    def exp_f32(self, x):
        """float32 exp within 1 ulp, computed in float32 (twice the lanes of double): Cody-Waite
        reduction n = round(x / ln2), r = x - n ln2 (|r| <= 0.347), Taylor degree 7, times
        2**n as two normal factors 2**h * 2**(n - h) (so subnormal results round once and n up
        to 128 overflows to inf); x clamped to [-104, 89], NaN passed through."""
        b = self.b
        n, r = self._cody_waite(self.clamp(x, -104.0, 89.0), LN2_HI_F32, LN2_LO_F32)
        p = self._exp_poly_f32(r)
        ni = b.fptosi(n, I32)
        h = b.ashr(ni, ll.Constant(I32, 1))
        y = b.fmul(b.fmul(p, self._exp_bits(h, F32)), self._exp_bits(b.sub(ni, h), F32))
        return self._nan_through(x, y)

    def tanh_f32(self, x):
        """float32 tanh within 2 ulp, computed in float32: |x| < 0.55: x * P(x**2); else
        1 - 2 / (exp(2|x|) + 1) with a float32 exp (Cody-Waite reduction, Taylor degree 7,
        exponent bits; 2|x| is in [1.1, 40], so 2**n is always normal)."""
        b = self.b
        a = self._upper(self._intr("fabs", x), 20.0)
        small = b.fmul(a, self.horner(b.fmul(a, a), TANH_SMALL_F32))
        t = self._lower(b.fmul(a, self._k(x, 2.0)), 1.1)
        n, r = self._cody_waite(t, LN2_HI_F32, LN2_LO_F32)
        p = self._exp_poly_f32(r)
        e = b.fmul(p, self._exp_bits(b.fptosi(n, I32), F32))
        return self._tanh_from(x, a, small, e, 0.55)

    # ---- float64: accurate to ~1-2 ulp of the double result, every lane branch-free

    def _exp_parts_f64(self, x, lo, hi):
        """(n, r) with x = n ln2 + r, |r| <= ln2/2 (Cody-Waite: n * LN2_HI is exact, the LN2_LO
        step adds an error far below an ulp of the result), x clamped to [lo, hi]."""
        return self._cody_waite(self.clamp(x, lo, hi), LN2_HI, LN2_LO)

    def _scale_f64(self, p, n):
        """p * 2**n for integral n in [-1076, 1024]: two normal factors, so that a subnormal
        result rounds once and n = 1024 with p >= 1 overflows to inf."""
        half = self._intr("floor", self.b.fmul(n, _c(0.5)))
        return self.b.fmul(self.b.fmul(p, self.pow2i(half)), self.pow2i(self.b.fsub(n, half)))

    def exp_f64(self, x):
        """e**r by its Taylor polynomial to degree 13 (truncation < 4e-18 relative for
        |r| <= ln2/2; Horner in fma, ~1 ulp), times 2**n; x clamped to [-746, 710], where the
        result is 0 and inf."""
        n, r = self._exp_parts_f64(x, -746.0, 710.0)
        p = self.horner(r, EXP_TAYLOR_F64)
        return self._nan_through(x, self._scale_f64(p, n))

    def exp2_f64(self, x):
        """2**r = e**(r ln2) for r = x - round(x) (exact), |r| <= 1/2, by the Taylor
        polynomial in r (coefficients ln2**k / k!), times 2**n."""
        n, r = self._exp2_parts(x, -1076.0, 1025.0)
        p = self.horner(r, EXP2_TAYLOR_F64)
        return self._nan_through(x, self._scale_f64(p, n))

    def expm1_f64(self, x):
        """The reduction of FreeBSD msun's s_expm1.c without its branches: x = n ln2 + r,
        expm1(r) = r + r**2 * Q(r) (Taylor to degree 14: relative accuracy at r -> 0), then
        2**n * (1 + expm1(r)) - 1 as one fma, fma(2**n, em, 2**n - 1), where 2**n - 1 is exact
        for |n| <= 53 (beyond, the 1 is below half an ulp); n above 1000 moves its excess into
        an exact final scaling. x clamped to [-40, 710] (-1 and inf there); -0.0 kept."""
        b = self.b
        n, r = self._exp_parts_f64(x, -40.0, 710.0)
        em = self._intr("fma", b.fmul(r, r), self.horner(r, EXPM1_TAYLOR_F64), r)
        n1 = self._upper(n, 1000.0)
        n2 = b.fsub(n, n1)                          # 0..24
        s1 = self.pow2i(n1)
        y = self._intr("fma", s1, em, b.fsub(s1, self.pow2i(b.fneg(n2))))
        y = b.fmul(y, self.pow2i(n2))
        y = self.select(self.cmp("==", x, 0.0), x, y)
        return self._nan_through(x, y)

    def _log_dd(self, x):
        """(k, hi, lo) with log(x) ~ k ln2 + hi + lo for finite x > 0 (subnormals scaled by
        2**54): the reduction and minimax polynomial of FreeBSD msun's e_log.c (Lg1..Lg7,
        error < 2**-58.45 on |s| <= 0.1716): x = 2**k (1 + f), 1 + f in [sqrt(2)/2, sqrt(2)),
        s = f/(2 + f), log(1 + f) = f - hfsq + s (hfsq + R(s**2)); hi = f - hfsq rounded,
        lo its exact rounding error plus the small rest."""
        b = self.b
        k, m = self._log_reduce(x)
        f = b.fsub(m, _c(1.0))                                   # exact
        s = b.fdiv(f, b.fadd(f, _c(2.0)))
        z = b.fmul(s, s)
        rr = b.fmul(z, self.horner(z, MSUN_LG))
        hfsq = b.fmul(b.fmul(f, f), _c(0.5))
        hi = b.fsub(f, hfsq)
        lo = b.fadd(b.fsub(b.fsub(f, hi), hfsq), b.fmul(s, b.fadd(hfsq, rr)))
        return k, hi, lo

    def _fast_two_sum_add(self, a, b_, tail):
        """a + b_ + tail with a fast two-sum of a and b_ (|a| >= |b_| or a = 0)."""
        b = self.b
        w = b.fadd(a, b_)
        err = b.fadd(b.fsub(a, w), b_)
        return b.fadd(w, b.fadd(err, tail))

    def _log_combine(self, k, hi, lo):
        """k ln2 + hi + lo with k ln2 = k LN2_HI (exact) + k LN2_LO and a fast two-sum
        (|k LN2_HI| >= ln2 > |hi| unless k = 0, where it is exact anyway)."""
        t = self.b.fmul(k, _c(LN2_HI))
        return self._fast_two_sum_add(t, hi, self._intr("fma", k, _c(LN2_LO), lo))

    def log_f64(self, x):
        k, hi, lo = self._log_dd(x)
        return self._log_special(x, self._log_combine(k, hi, lo))

    def log2_f64(self, x):
        """k + (hi + lo) log2(e), with hi * LOG2E as an exact product pair (fma) and log2(e)
        in two parts, then a fast two-sum with k (the structure of msun's e_log2.c)."""
        b = self.b
        k, hi, lo = self._log_dd(x)
        ph = b.fmul(hi, _c(LOG2E))
        pl = self._intr("fma", hi, _c(LOG2E), b.fneg(ph))
        tail = b.fadd(pl, self._intr("fma", lo, _c(LOG2E), b.fmul(hi, _c(LOG2E_LO))))
        return self._log_special(x, self._fast_two_sum_add(k, ph, tail))

    def log1p_f64(self, x):
        """log(u) + c/u for u = 1 + x rounded and c its exact rounding error (two-sum), as
        msun's s_log1p.c corrects it; -0.0 kept."""
        b = self.b
        u = b.fadd(x, _c(1.0))
        bb = b.fsub(u, x)
        c = b.fadd(b.fsub(_c(1.0), bb), b.fsub(x, b.fsub(u, bb)))
        k, hi, lo = self._log_dd(u)
        y = self._log_combine(k, hi, b.fadd(lo, b.fdiv(c, u)))
        y = self.select(self.cmp("==", x, 0.0), x, y)
        return self._log_special(x, y, at_zero=-1.0)

    def tanh_f64(self, x):
        """msun's s_tanh.c without branches: a = |x| (clamped to 22, where tanh rounds to 1);
        a < 1: -t / (t + 2) with t = expm1(-2a); else 1 - 2 / (t + 2) with t = expm1(2a); one
        expm1 and one division per lane, the sign copied from x (NaN and -0.0 kept)."""
        b = self.b
        a = self.clamp(self._intr("fabs", x), 0.0, 22.0)
        small = self.cmp("<", a, 1.0)
        t = self.expm1_f64(b.fmul(a, self.select(small, _c(-2.0), _c(2.0))))
        q = b.fdiv(self.select(small, b.fneg(t), _c(2.0)), b.fadd(t, _c(2.0)))
        return self._intr("copysign", self.select(small, q, b.fsub(_c(1.0), q)), x)

    def _erfcx_table(self):
        return self._const_table("wick_erfcx_f64", ERFCX_F64)

    def _erfc_pos_f64(self, a):
        """erfc(a) for a >= 0.5: exp(-a**2) erfcx(a), a**2 = hi + lo exactly (fma), so
        exp(-a**2) = exp(-hi) (1 - lo); erfcx from the coefficients of the unit interval
        holding a (gathered: branch-free); a clamped to 28.5 (erfc = 0 beyond 27.3)."""
        b = self.b
        ac = self.clamp(a, 0.5, 28.5)
        ac = self.select(self.isnan(ac), _c(1.0), ac)     # a defined index for NaN lanes
        i = self._upper(self._intr("floor", b.fsub(ac, _c(0.5))), 27.0)
        t = b.fmul(b.fsub(ac, b.fadd(i, _c(1.0))), _c(2.0))
        base = b.mul(b.fptosi(i, I64), ll.Constant(I64, ERFCX_F64_N))
        tab = self._erfcx_table()
        g = self._gather(tab, base, ERFCX_F64_N - 1)
        for j in range(ERFCX_F64_N - 2, -1, -1):
            g = self._intr("fma", g, t, self._gather(tab, base, j))
        hi = b.fmul(ac, ac)
        lo = self._intr("fma", ac, ac, b.fneg(hi))
        g = self._intr("fma", b.fneg(lo), g, g)
        return b.fmul(self.exp_f64(b.fneg(hi)), g)

    def _erf_small_f64(self, a):
        """erf(a) / a for |a| < 0.5."""
        return self.horner(self.b.fmul(a, a), ERF_TAYLOR_F64)

    def erf_f64(self, x):
        """|x| < 0.5: x P(x**2); else 1 - erfc(|x|) (erfc < 0.48 there), sign copied."""
        y = self._erf_from(x, 0.5, lambda a: self.b.fmul(a, self._erf_small_f64(a)),
                           self._erfc_pos_f64)
        return self._nan_through(x, y)

    def erfc_f64(self, x):
        """|x| < 0.5: fma(-x, P(x**2), 1); else exp(-x**2) erfcx(|x|), and 2 - that for
        x < 0."""
        b = self.b
        a = self._intr("fabs", x)
        near = self._intr("fma", b.fneg(x), self._erf_small_f64(a), _c(1.0))
        far = self._erfc_reflect(x, self._erfc_pos_f64(a))
        y = self.select(self.cmp("<", a, 0.5), near, far)
        return self._nan_through(x, y)

FUNCTIONS_F64 = ("exp", "exp2", "expm1", "log", "log2", "log1p", "tanh", "erf", "erfc")
FUNCTIONS = ("exp", "exp2", "expm1", "log", "log2", "log1p", "tanh", "erf", "erfc", "sin", "cos",
             "tan", "atan", "atan2", "pow")
