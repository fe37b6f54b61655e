import type { Catalogue } from './en';

/** The respondent page's own words in Arabic (see en.ts; written right to left, six plural forms). */
export const ar: Catalogue = {
  submit: 'إرسال',
  next: 'التالي',
  back: 'السابق',
  saveLater: 'احفظ وأكمل لاحقًا',
  progress: 'الصفحة {position} من {total}',
  requiredNote: 'الأسئلة المميزة بـ {mark} مطلوبة.',
  savedAsYouGo: 'تُحفظ إجاباتك على هذا الجهاز أولًا بأول.',
  problems:
    '{count, plural, zero {لا توجد مشكلات في إجاباتك} one {توجد مشكلة في إجاباتك} two {توجد مشكلتان في إجاباتك} few {توجد # مشكلات في إجاباتك} many {توجد # مشكلة في إجاباتك} other {توجد # مشكلة في إجاباتك}}',
  needsAnswer: 'هذا السؤال يحتاج إلى إجابة.',
  yes: 'نعم',
  no: 'لا',
  thankYou: 'شكرًا لك!',
  thankYouTitle: 'شكرًا لك',
  received: 'وصلتنا إجاباتك عن «{title}».',
  continue: 'متابعة',
  rankTop: 'اختر أفضل {count} لديك: 1 هو الأفضل.',
  rankAll: 'أعطِ كل خيار ترتيبًا: 1 هو الأفضل.',
  language: 'اللغة',
  uploadedFiles: 'الملفات المرفوعة',
  keepFile: 'الاحتفاظ بـ {name}',
  anyFile: 'أي نوع من الملفات.',
  acceptedFiles: 'المقبول: {types}.',
  fileLimit:
    '{max, plural, zero {حتى {mb} ميغابايت.} one {حتى {mb} ميغابايت.} two {حتى {mb} ميغابايت لكل ملف؛ ملفان على الأكثر.} few {حتى {mb} ميغابايت لكل ملف؛ # ملفات على الأكثر.} many {حتى {mb} ميغابايت لكل ملف؛ # ملفًا على الأكثر.} other {حتى {mb} ميغابايت لكل ملف؛ # ملف على الأكثر.}}',
  leaveEmpty: 'اترك هذا الحقل فارغًا',
  spamNoScript:
    'يتحقق هذا النموذج من أن الإجابات صادرة عن شخص بعملية حسابية قصيرة في متصفحك، وهي تحتاج إلى JavaScript. بدونه تُحفظ إجاباتك ليراجعها صاحب النموذج.',
  turnedSubmit: 'تنتهي إجاباتك بالنموذج في هذه الصفحة: الزر يرسلها الآن.',
  turnedNext: 'يستمر النموذج بعد هذه الصفحة: الزر يقول الآن التالي.',
  choose: 'اختر…',
  removeFile: 'إزالة',
};
