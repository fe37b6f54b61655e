import { Tool } from '../tools/tool.decorator';
import { FORM_TRANSITION, FormTransitionTool } from './form-transition.tool';

@Tool({
  name: 'close_form',
  title: 'Close a form',
  description:
    'Stops a published form from taking responses (its responses stay). publish_form reopens it. Closing a closed form changes nothing.',
  ...FORM_TRANSITION,
})
export class CloseFormTool extends FormTransitionTool {
  protected readonly target = 'closed';
}
